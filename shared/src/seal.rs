//! Sealing: the webhook signs each plan with Ed25519; the installer and the plugin verify.
//!
//! The signature covers a domain-separation prefix and the plan's canonical JSON, so a
//! signature over anything else can never pass as a seal. Each seal names its key's ID,
//! and a [`Keyring`] holds every public key still accepted, so keys can rotate: publish
//! the new public key, switch the webhook to the new private key, then drop the old one.

use std::{
    collections::{BTreeMap, HashSet, VecDeque},
    sync::{Arc, Mutex},
};

use base64::{Engine, engine::general_purpose::STANDARD};
use ed25519_dalek::{
    Signature, Signer, SigningKey, VerifyingKey,
    pkcs8::{
        DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey,
        spki::der::pem::LineEnding,
    },
};
use sha2::{Digest, Sha256};

use crate::{
    api::{Plan, Seal, SealedPlan},
    canonical,
};

/// The algorithm named in every seal.
pub const ALGORITHM: &str = "Ed25519";
const DOMAIN: &[u8] = b"providers.platform.dev/v1alpha1 plan\n";

/// Why a key could not be loaded or a seal did not verify. The Display text is what a
/// user sees.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("the sealing key is not a PKCS#8 Ed25519 private key in PEM: {0}")]
    InvalidPrivateKey(String),
    #[error("public key {name} is not an Ed25519 public key in PEM: {reason}")]
    InvalidPublicKey { name: String, reason: String },
    #[error("the plan is sealed with key {key_id}, which is not among the published keys")]
    UnknownKey { key_id: String },
    #[error("the plan's seal uses algorithm {0}; only Ed25519 is accepted")]
    UnsupportedAlgorithm(String),
    #[error("the plan's signature is not valid base64 of 64 bytes")]
    MalformedSignature,
    #[error(
        "the plan's signature does not match its contents: it was changed after sealing or not sealed by the webhook"
    )]
    SignatureMismatch,
    #[error("the plan cannot be serialized: {0}")]
    Serialize(String),
}

/// The key ID of a public key: the first 16 hex digits of the SHA-256 of its raw bytes.
pub fn key_id(key: &VerifyingKey) -> String {
    hex::encode(&Sha256::digest(key.as_bytes())[..8])
}

/// The bytes a seal signs.
fn signed_bytes(plan: &Plan) -> Result<Vec<u8>, SealError> {
    let value = serde_json::to_value(plan).map_err(|e| SealError::Serialize(e.to_string()))?;
    let mut bytes = DOMAIN.to_vec();
    bytes.extend(canonical::to_vec(&value));
    Ok(bytes)
}

/// The webhook's signing key.
pub struct Sealer {
    key: SigningKey,
    key_id: String,
}

impl Sealer {
    /// Loads a PKCS#8 PEM private key (`openssl genpkey -algorithm ed25519`).
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, SealError> {
        let key = SigningKey::from_pkcs8_pem(pem)
            .map_err(|e| SealError::InvalidPrivateKey(e.to_string()))?;
        Ok(Self::from_signing_key(key))
    }

    /// A new key from the operating system's random source.
    pub fn generate() -> Result<Self, SealError> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed)
            .map_err(|e| SealError::InvalidPrivateKey(format!("no randomness: {e}")))?;
        Ok(Self::from_seed(seed))
    }

    /// The private key as PKCS#8 PEM, the form [`Sealer::from_pkcs8_pem`] reads.
    pub fn to_pkcs8_pem(&self) -> Result<String, SealError> {
        self.key
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem| pem.to_string())
            .map_err(|e| SealError::InvalidPrivateKey(e.to_string()))
    }

    /// A sealer from a raw 32-byte seed (tests and key generation).
    pub fn from_seed(seed: [u8; 32]) -> Self {
        Self::from_signing_key(SigningKey::from_bytes(&seed))
    }

    fn from_signing_key(key: SigningKey) -> Self {
        let key_id = key_id(&key.verifying_key());
        Self { key, key_id }
    }

    /// This key's ID.
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The public key, SPKI PEM: what the published ConfigMap holds.
    pub fn public_key_pem(&self) -> String {
        self.key
            .verifying_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap_or_default()
    }

    /// Signs a plan.
    pub fn seal(&self, plan: Plan) -> Result<SealedPlan, SealError> {
        self.sign(plan).map(|signed| signed.sealed)
    }

    /// Signs a plan and notes the seal in `keyring`, when the keyring accepts this very
    /// key: the validating call of the same write then finds it noted instead of
    /// verifying what this process has just signed.
    pub fn seal_noted(&self, plan: Plan, keyring: &Keyring) -> Result<SealedPlan, SealError> {
        let signed = self.sign(plan)?;
        if keyring.keys.get(&self.key_id) == Some(&self.key.verifying_key()) {
            keyring.signed_here.note(seal_digest(
                &self.key_id,
                &signed.signature,
                &signed.message,
            ));
        }
        Ok(signed.sealed)
    }

    fn sign(&self, plan: Plan) -> Result<Signed, SealError> {
        let message = signed_bytes(&plan)?;
        let signature = self.key.sign(&message).to_bytes();
        let sealed = SealedPlan {
            plan,
            seal: Seal {
                key_id: self.key_id.clone(),
                algorithm: ALGORITHM.to_owned(),
                signature: STANDARD.encode(signature),
            },
        };
        Ok(Signed {
            sealed,
            signature,
            message,
        })
    }
}

/// A plan just signed, with the signature and the bytes it covers.
struct Signed {
    sealed: SealedPlan,
    signature: [u8; 64],
    message: Vec<u8>,
}

/// How many seals a keyring remembers.
const SIGNED_HERE_CAPACITY: usize = 2048;

/// The digest a seal is remembered by: its key ID, its signature and every byte it signs,
/// so a digest that matches stands for exactly the bytes this process signed with a key
/// the keyring holds, which verification would accept (Ed25519 is deterministic).
fn seal_digest(key_id: &str, signature: &[u8; 64], message: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update((key_id.len() as u64).to_be_bytes());
    hasher.update(key_id.as_bytes());
    hasher.update(signature);
    hasher.update(message);
    hasher.finalize().into()
}

/// The seals this process signed with a key its keyring holds, by digest: the mutating
/// webhook seals a write, then the validating webhook checks the same write, and need
/// not verify a signature made a moment ago in the same process. Only the process's own
/// signatures enter (never a seal read from a request), so nothing a client sends can
/// fill it. Bounded: the oldest is forgotten first.
#[derive(Debug, Default)]
struct SignedHere {
    inner: Mutex<SignedHereInner>,
}

#[derive(Debug, Default)]
struct SignedHereInner {
    digests: HashSet<[u8; 32]>,
    order: VecDeque<[u8; 32]>,
}

impl SignedHere {
    fn contains(&self, digest: &[u8; 32]) -> bool {
        self.inner
            .lock()
            .is_ok_and(|inner| inner.digests.contains(digest))
    }

    fn note(&self, digest: [u8; 32]) {
        // A poisoned lock only costs verifications, never admits anything.
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if !inner.digests.insert(digest) {
            return;
        }
        inner.order.push_back(digest);
        if inner.order.len() > SIGNED_HERE_CAPACITY
            && let Some(oldest) = inner.order.pop_front()
        {
            inner.digests.remove(&oldest);
        }
    }
}

/// The public keys accepted for verification, by key ID, and the seals this process
/// signed with one of them (shared by clones; a keyring's keys never change, so a new
/// set of keys starts with nothing remembered).
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    keys: BTreeMap<String, VerifyingKey>,
    signed_here: Arc<SignedHere>,
}

impl Keyring {
    /// A keyring from PEM public keys, each with a name for error messages (for example the
    /// ConfigMap key it came from). Key IDs are computed from the keys, never trusted from names.
    pub fn from_pems<'a>(
        pems: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, SealError> {
        let mut keys = BTreeMap::new();
        for (name, pem) in pems {
            let key = VerifyingKey::from_public_key_pem(pem).map_err(|e| {
                SealError::InvalidPublicKey {
                    name: name.to_owned(),
                    reason: e.to_string(),
                }
            })?;
            keys.insert(key_id(&key), key);
        }
        Ok(Self {
            keys,
            signed_here: Arc::default(),
        })
    }

    /// The key IDs in the ring.
    pub fn key_ids(&self) -> impl Iterator<Item = &str> {
        self.keys.keys().map(String::as_str)
    }

    /// Checks a sealed plan's signature.
    pub fn verify(&self, sealed: &SealedPlan) -> Result<(), SealError> {
        if sealed.seal.algorithm != ALGORITHM {
            return Err(SealError::UnsupportedAlgorithm(crate::text::quoted(
                &sealed.seal.algorithm,
            )));
        }
        let key = self
            .keys
            .get(&sealed.seal.key_id)
            .ok_or_else(|| SealError::UnknownKey {
                key_id: crate::text::quoted(&sealed.seal.key_id),
            })?;
        let bytes: [u8; 64] = STANDARD
            .decode(&sealed.seal.signature)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or(SealError::MalformedSignature)?;
        let message = signed_bytes(&sealed.plan)?;
        let digest = seal_digest(&sealed.seal.key_id, &bytes, &message);
        if self.signed_here.contains(&digest) {
            return Ok(());
        }
        key.verify_strict(&message, &Signature::from_bytes(&bytes))
            .map_err(|_| SealError::SignatureMismatch)
    }
}

impl From<&Sealer> for Keyring {
    fn from(sealer: &Sealer) -> Self {
        let key = sealer.key.verifying_key();
        Self {
            keys: BTreeMap::from([(key_id(&key), key)]),
            signed_here: Arc::default(),
        }
    }
}
