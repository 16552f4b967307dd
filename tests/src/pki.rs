//! Certificates for the control plane and for webhooks: one CA per control plane.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// A certificate and its private key, PEM-encoded.
#[derive(Clone, Debug)]
pub struct CertifiedKey {
    pub cert_pem: String,
    pub key_pem: String,
}

/// A certificate authority that issues serving and client certificates.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    /// The CA certificate, PEM-encoded: the caBundle of whatever trusts it.
    pub cert_pem: String,
}

impl Authority {
    /// A new CA with a fresh key.
    pub fn generate(common_name: &str) -> anyhow::Result<Self> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A serving certificate for 127.0.0.1 and localhost (and any extra DNS names).
    pub fn issue_serving(&self, common_name: &str, dns: &[&str]) -> anyhow::Result<CertifiedKey> {
        let mut names: Vec<String> = vec!["localhost".to_owned()];
        names.extend(dns.iter().map(|d| (*d).to_owned()));
        let mut params = CertificateParams::new(names)?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate: CN is the user name, O the groups.
    pub fn issue_client(&self, user: &str, groups: &[&str]) -> anyhow::Result<CertifiedKey> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, user);
        for group in groups {
            params
                .distinguished_name
                .push(DnType::OrganizationName, *group);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> anyhow::Result<CertifiedKey> {
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(CertifiedKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A bare key pair (PKCS#8 PEM), for service account token signing.
pub fn key_pair_pem() -> anyhow::Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.serialize_pem(), key.public_key_pem()))
}
