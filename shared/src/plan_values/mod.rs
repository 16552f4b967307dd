//! Plan values by content digest: the resolved chart values of a sealed plan live in a
//! [`PlanValues`](crate::api::PlanValues) object named by the Workspace and the values'
//! digest; the plan carries only `valuesDigest`, which its seal covers (ADR 35).
//!
//! A Workspace therefore weighs the same whatever its Recipe's defaults weigh, and the same
//! values sealed again (a retry, a repair, a rollback) are stored once.

mod disown;
mod limits;
pub mod reseal;
pub mod sweep;

use std::io::{Read, Write};

use base64::{Engine, engine::general_purpose::STANDARD};
use flate2::{Compression, read::GzDecoder, write::GzEncoder};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::api::{Plan, PlanValuesSpec};

pub use disown::disown_lost_owners;
pub use limits::{
    MAX_CANONICAL_BYTES, MAX_DATA_LENGTH, MAX_RECIPE_VALUES_BYTES, RecipeValuesTooLarge,
    ValuesTooLarge, check_recipe_values, values_text_len,
};

/// What every digest starts with.
pub const DIGEST_PREFIX: &str = "sha256:";
/// On a PlanValues object: its Workspace's name, as a label value (hashed when it is not one).
pub const LABEL_WORKSPACE: &str = "providers.platform.dev/workspace";
/// On a PlanValues object: its Workspace's name, whole.
pub const ANNOTATION_WORKSPACE: &str = "providers.platform.dev/workspace";
/// On a PlanValues object: `false` until the installer has made its Workspace its owner.
/// The webhook counts the objects still `false` in a namespace and stores no more past
/// [`MAX_PENDING`]: values stored for writes the API server then refuses cannot pile up.
pub const LABEL_ADOPTED: &str = "providers.platform.dev/adopted";
/// The most PlanValues of one namespace that may wait for their Workspace's installer at
/// once (in flight, or left by writes the API server refused, until the sweep).
pub const MAX_PENDING: usize = 128;
/// On a PlanValues object: when a plan referring to it was last sealed. The installer's
/// sweep leaves an object alone for a while after that, so a plan sealed a moment ago and
/// not yet seen in its cache keeps its values.
pub const ANNOTATION_LAST_SEALED: &str = "providers.platform.dev/last-sealed";

/// The canonical JSON of `values`: the bytes the digest is taken over.
pub fn canonical(values: &Value) -> Vec<u8> {
    crate::canonical::to_vec(values)
}

/// The digest of canonical JSON bytes.
pub fn digest_of_canonical(bytes: &[u8]) -> String {
    format!("{DIGEST_PREFIX}{}", hex::encode(Sha256::digest(bytes)))
}

/// The digest of `values`, as a plan's `valuesDigest` names it.
pub fn digest_of(values: &Value) -> String {
    digest_of_canonical(&canonical(values))
}

/// Whether `digest` is written as this module writes digests.
pub fn is_digest(digest: &str) -> bool {
    digest.strip_prefix(DIGEST_PREFIX).is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The name of the PlanValues object that holds the values of `digest` for the Workspace
/// named `workspace`: the Workspace's name and 128 bits of the digest,
/// `<workspace>-values-<hex>`; when that leaves no room, 128 bits of a hash of the name
/// instead, `<hex>.values.<hex>`. No two Workspaces share a name: two names of the first
/// form have the same length and so the same Workspace; a name of the second form ends in
/// `.values.` and 32 hex digits, which no name of the first form does. At most 253
/// characters, a DNS subdomain like the Workspace's own.
pub fn object_name(workspace: &str, digest: &str) -> String {
    let short = digest
        .strip_prefix(DIGEST_PREFIX)
        .unwrap_or(digest)
        .get(..32)
        .unwrap_or(digest);
    let suffix = format!("-values-{short}");
    if workspace.len() + suffix.len() <= 253 {
        return format!("{workspace}{suffix}");
    }
    let hashed = hex::encode(&Sha256::digest(workspace.as_bytes())[..16]);
    format!("{hashed}.values.{short}")
}

/// Where a plan's values are: in a PlanValues object by digest, or (plans sealed before
/// values were stored apart) inline in the plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Source<'a> {
    Stored { digest: &'a str },
    Inline(&'a Value),
}

/// Where `plan`'s values are. A plan with neither holds no values (`{}`).
pub fn source_of(plan: &Plan) -> Source<'_> {
    static EMPTY: Value = Value::Null;
    match (&plan.values_digest, &plan.values) {
        (Some(digest), _) => Source::Stored { digest },
        (None, Some(values)) => Source::Inline(values),
        (None, None) => Source::Inline(&EMPTY),
    }
}

/// The stored form of `values`: canonical JSON, gzip, base64, with its digest and size.
pub fn encode(values: &Value) -> Result<PlanValuesSpec, ValuesTooLarge> {
    let bytes = canonical(values);
    if bytes.len() as i64 > MAX_CANONICAL_BYTES {
        return Err(ValuesTooLarge {
            size: bytes.len(),
            limit: MAX_CANONICAL_BYTES as usize,
        });
    }
    let mut gzip = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::default());
    // Writing into a Vec cannot fail.
    let _ = gzip.write_all(&bytes);
    let compressed = gzip.finish().unwrap_or_default();
    Ok(PlanValuesSpec {
        digest: digest_of_canonical(&bytes),
        size: bytes.len() as i64,
        data: STANDARD.encode(compressed),
    })
}

/// Why stored values cannot be used for a plan. The Display text is what a user reads,
/// after "the values of attempt N (object X) ...".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValuesDefect {
    #[error(
        "name digest {stored}, not the sealed {sealed}: the object was replaced after the plan was sealed"
    )]
    OtherDigest { sealed: String, stored: String },
    #[error(
        "hold content whose digest is {actual}, not the sealed {sealed}: the object was changed after the plan was sealed"
    )]
    ContentChanged { sealed: String, actual: String },
    #[error("are not base64: {0}")]
    NotBase64(String),
    #[error("do not decompress: {0}")]
    NotGzip(String),
    #[error("declare {declared} bytes but decompress to {actual}")]
    SizeMismatch { declared: i64, actual: usize },
    #[error("decompress to more than {limit} bytes, the most a plan's values may hold")]
    TooLarge { limit: i64 },
    #[error("are not JSON: {0}")]
    NotJson(String),
}

/// Reads stored values for a plan sealed with `sealed_digest`: the declared digest must be
/// the sealed one, the data must decompress within [`MAX_CANONICAL_BYTES`] to exactly the
/// declared size, and the digest of what it decompresses to must be the sealed one. Only
/// then is it parsed. Costs at most [`MAX_CANONICAL_BYTES`] of memory whatever the object holds.
pub fn decode(stored: &PlanValuesSpec, sealed_digest: &str) -> Result<Value, ValuesDefect> {
    if stored.digest != sealed_digest {
        return Err(ValuesDefect::OtherDigest {
            sealed: sealed_digest.to_owned(),
            stored: crate::text::quoted(&stored.digest),
        });
    }
    if stored.size > MAX_CANONICAL_BYTES || stored.size < 0 {
        return Err(ValuesDefect::TooLarge {
            limit: MAX_CANONICAL_BYTES,
        });
    }
    let compressed = STANDARD
        .decode(stored.data.as_bytes())
        .map_err(|error| ValuesDefect::NotBase64(error.to_string()))?;
    let mut bytes = Vec::with_capacity(stored.size as usize);
    GzDecoder::new(compressed.as_slice())
        .take(MAX_CANONICAL_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| ValuesDefect::NotGzip(error.to_string()))?;
    if bytes.len() as i64 > MAX_CANONICAL_BYTES {
        return Err(ValuesDefect::TooLarge {
            limit: MAX_CANONICAL_BYTES,
        });
    }
    if bytes.len() as i64 != stored.size {
        return Err(ValuesDefect::SizeMismatch {
            declared: stored.size,
            actual: bytes.len(),
        });
    }
    let actual = digest_of_canonical(&bytes);
    if actual != sealed_digest {
        return Err(ValuesDefect::ContentChanged {
            sealed: sealed_digest.to_owned(),
            actual,
        });
    }
    let mut values: Value =
        serde_json::from_slice(&bytes).map_err(|error| ValuesDefect::NotJson(error.to_string()))?;
    crate::api::json_number::without_negative_zero(&mut values);
    Ok(values)
}

#[cfg(test)]
mod tests;
