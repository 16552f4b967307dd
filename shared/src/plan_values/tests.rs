use std::io::Write;

use base64::{Engine, engine::general_purpose::STANDARD};
use flate2::{Compression, write::GzEncoder};
use serde_json::json;

use super::*;

fn gzip_base64(bytes: &[u8]) -> String {
    let mut gzip = GzEncoder::new(Vec::new(), Compression::default());
    gzip.write_all(bytes).unwrap();
    STANDARD.encode(gzip.finish().unwrap())
}

#[test]
fn stored_values_read_back_as_sealed() {
    let values = json!({"z": 1, "a": {"nested": [1, 2, "three"]}, "n": -0.0});
    let stored = encode(&values).unwrap();
    assert_eq!(stored.digest, digest_of(&values));
    assert!(is_digest(&stored.digest));
    assert_eq!(stored.size as usize, canonical(&values).len());
    // A negative zero reads back as the API server would give it: the integer 0.
    assert_eq!(
        decode(&stored, &stored.digest).unwrap(),
        json!({"z": 1, "a": {"nested": [1, 2, "three"]}, "n": 0})
    );
}

#[test]
fn the_digest_does_not_depend_on_key_order() {
    let a: Value = serde_json::from_str(r#"{"b":1,"a":2}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a":2,"b":1}"#).unwrap();
    assert_eq!(digest_of(&a), digest_of(&b));
    assert_ne!(digest_of(&a), digest_of(&json!({"a": 2, "b": 2})));
}

#[test]
fn values_changed_after_sealing_are_refused() {
    let sealed = encode(&json!({"replicas": 1})).unwrap();
    let mut changed = encode(&json!({"replicas": 9})).unwrap();
    // Another object's values under the sealed digest's name.
    assert!(matches!(
        decode(&changed, &sealed.digest),
        Err(ValuesDefect::OtherDigest { .. })
    ));
    // The declared digest kept, the content swapped.
    changed.digest = sealed.digest.clone();
    let defect = decode(&changed, &sealed.digest).unwrap_err();
    assert!(
        matches!(defect, ValuesDefect::ContentChanged { .. }),
        "{defect}"
    );
    assert!(
        defect
            .to_string()
            .contains("changed after the plan was sealed")
    );
}

#[test]
fn data_that_is_not_what_it_says_is_refused() {
    let sealed = encode(&json!({"replicas": 1})).unwrap();
    let mut broken = sealed.clone();
    broken.data = "not base64!".into();
    assert!(matches!(
        decode(&broken, &sealed.digest),
        Err(ValuesDefect::NotBase64(_))
    ));
    broken.data = STANDARD.encode(b"plain, not gzip");
    assert!(matches!(
        decode(&broken, &sealed.digest),
        Err(ValuesDefect::NotGzip(_))
    ));
    let mut wrong_size = sealed.clone();
    wrong_size.size += 1;
    assert!(matches!(
        decode(&wrong_size, &sealed.digest),
        Err(ValuesDefect::SizeMismatch { .. })
    ));
    // JSON text whose digest is what is declared, but which is not JSON.
    let text = b"{not json";
    let not_json = PlanValuesSpec {
        digest: digest_of_canonical(text),
        size: text.len() as i64,
        data: gzip_base64(text),
    };
    assert!(matches!(
        decode(&not_json, &not_json.digest),
        Err(ValuesDefect::NotJson(_))
    ));
}

#[test]
fn a_decompression_bomb_costs_at_most_the_limit() {
    // 64 MiB of zeros compress to about 64 KiB; reading stops one byte past the limit.
    let zeros = vec![b'0'; 64 * 1024 * 1024];
    let bomb = PlanValuesSpec {
        digest: digest_of_canonical(&zeros),
        size: 100,
        data: gzip_base64(&zeros),
    };
    assert_eq!(
        decode(&bomb, &bomb.digest),
        Err(ValuesDefect::TooLarge {
            limit: MAX_CANONICAL_BYTES
        })
    );
    let mut declared = bomb.clone();
    declared.size = i64::MAX;
    assert_eq!(
        decode(&declared, &declared.digest),
        Err(ValuesDefect::TooLarge {
            limit: MAX_CANONICAL_BYTES
        })
    );
}

#[test]
fn values_over_the_limit_are_not_stored() {
    let big = json!({"blob": "x".repeat(MAX_CANONICAL_BYTES as usize)});
    let error = encode(&big).unwrap_err();
    assert!(error.size > error.limit);
    assert!(error.to_string().contains("ask the platform team"));
}

#[test]
fn the_largest_recipe_defaults_fit_in_a_plan_with_the_tenants_values() {
    // At the recipe limit, with 32 KiB of tenant values on top, the plan still fits.
    let defaults = json!({"blob": "x".repeat(MAX_RECIPE_VALUES_BYTES - 12)});
    assert!(check_recipe_values(Some(&defaults)).is_ok());
    let mut resolved = defaults.clone();
    resolved["tenant"] = json!("y".repeat(32 * 1024));
    assert!(encode(&resolved).is_ok());
    // Incompressible values at the plan limit fit in the object's data field.
    assert!(4 * (MAX_CANONICAL_BYTES as usize + 64).div_ceil(3) <= MAX_DATA_LENGTH);
}

#[test]
fn recipe_defaults_over_the_limit_are_refused_with_what_to_do() {
    let over = json!({"blob": "x".repeat(MAX_RECIPE_VALUES_BYTES)});
    let refused = check_recipe_values(Some(&over)).unwrap_err();
    assert!(refused.size > MAX_RECIPE_VALUES_BYTES);
    let message = refused.to_string();
    assert!(message.starts_with("spec.values:"), "{message}");
    assert!(message.contains("split the recipe"), "{message}");
    assert!(check_recipe_values(None).is_ok());
    // Counted as the runner reads them: a character YAML would not keep takes six bytes.
    let escaped = json!({"blob": "\u{1}".repeat(MAX_RECIPE_VALUES_BYTES / 5)});
    assert!(check_recipe_values(Some(&escaped)).is_err());
}

#[test]
fn object_names_are_dns_subdomains_whatever_the_workspace_name() {
    let digest = digest_of(&json!({}));
    let short = object_name("demo", &digest);
    assert_eq!(short, format!("demo-values-{}", &digest[7..39]));
    let long_name = "a".repeat(253);
    let long = object_name(&long_name, &digest);
    // The API server's rule for object names (a DNS subdomain, without a limit per label).
    let valid = |name: &str| {
        name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric())
    };
    assert!(valid(&long), "{long}");
    // A Workspace named like the hashed form has objects of another name.
    let hashed_part = long.split('.').next().unwrap();
    assert_ne!(object_name(hashed_part, &digest), long);
    assert!(!object_name(&format!("{hashed_part}.values"), &digest).ends_with(&long));
    assert!(valid(&object_name(
        &format!("{}.x", "a".repeat(200)),
        &digest
    )));
    assert_ne!(object_name(&"b".repeat(253), &digest), long);
    assert_ne!(object_name("demo", &digest_of(&json!({"a": 1}))), short);
}

mod sweeping {
    use k8s_openapi::jiff::{SignedDuration, Timestamp};
    use serde_json::json;

    use super::super::sweep::{GRACE, StoredValues, Verdict, referenced, verdict};
    use crate::api::{
        AttemptRecord, KeptPlan, SealedPlan, Workspace, WorkspaceSpec, WorkspaceStatus,
    };

    fn sealed(values: serde_json::Value) -> SealedPlan {
        let mut plan = crate::testing::plan();
        plan.workspace.name = "demo".into();
        plan.values = None;
        plan.values_digest = Some(super::digest_of(&values));
        crate::seal::Sealer::from_seed([1; 32]).seal(plan).unwrap()
    }

    fn workspace(current: serde_json::Value, kept: &[serde_json::Value]) -> Workspace {
        let mut ws = Workspace::new(
            "demo",
            WorkspaceSpec {
                recipe: "hello".into(),
                edge: "edge-1".into(),
                version: None,
                values: None,
                retry: None,
                plan: Some(sealed(current)),
            },
        );
        ws.metadata.namespace = Some("org-a".into());
        ws.metadata.uid = Some("uid-demo".into());
        ws.status = Some(WorkspaceStatus {
            attempts: kept
                .iter()
                .enumerate()
                .map(|(i, values)| AttemptRecord {
                    attempt: i as i64 + 1,
                    attempt_id: format!("a{i}"),
                    version: "0.1.0".into(),
                    owner: "alice".into(),
                    job: format!("j{i}"),
                    result: None,
                    finished_at: None,
                    message: None,
                    cause: None,
                    restores: None,
                    kept: Some(KeptPlan {
                        version: None,
                        values: None,
                        plan: sealed(values.clone()),
                    }),
                })
                .collect(),
            ..Default::default()
        });
        ws
    }

    fn stored(values: serde_json::Value, owners: &[&str], age: SignedDuration) -> StoredValues {
        StoredValues {
            name: super::object_name("demo", &super::digest_of(&values)),
            workspace: "demo".into(),
            owners: owners.iter().map(|o| o.to_string()).collect(),
            last_sealed: Some(Timestamp::now() - age),
        }
    }

    const OLD: SignedDuration = SignedDuration::from_secs(3600);

    fn judge(stored: &StoredValues, cached: Option<&Workspace>) -> Verdict {
        verdict(stored, cached, Timestamp::now(), GRACE)
    }

    #[test]
    fn values_a_plan_refers_to_are_kept() {
        let ws = workspace(json!({"v": 3}), &[json!({"v": 1}), json!({"v": 2})]);
        assert_eq!(referenced(&ws).len(), 3);
        for v in 1..=3 {
            let kept = stored(json!({"v": v}), &["uid-demo"], OLD);
            assert_eq!(judge(&kept, Some(&ws)), Verdict::Keep);
        }
    }

    #[test]
    fn values_no_plan_refers_to_go_once_the_grace_has_passed() {
        let ws = workspace(json!({"v": 3}), &[]);
        let unused = json!({"v": 1});
        let owned = stored(unused.clone(), &["uid-demo"], OLD);
        assert_eq!(judge(&owned, Some(&ws)), Verdict::Delete);
        let unowned = stored(unused.clone(), &[], OLD);
        assert_eq!(judge(&unowned, Some(&ws)), Verdict::Delete);
        // Sealed a moment ago, and not in the cache yet.
        let fresh = stored(unused.clone(), &[], GRACE - SignedDuration::from_secs(60));
        assert_eq!(judge(&fresh, Some(&ws)), Verdict::Keep);
        // Written for a write the API server refused, or owned by a Workspace another
        // shard caches or one deleted: the hub says whether its Workspace is there.
        assert_eq!(judge(&unowned, None), Verdict::DeleteUnlessOwnerExists);
        let others = stored(unused, &["uid-other"], OLD);
        assert_eq!(judge(&others, None), Verdict::DeleteUnlessOwnerExists);
        // Owned by an earlier Workspace of the same name: the hub's answer too.
        assert_eq!(judge(&others, Some(&ws)), Verdict::DeleteUnlessOwnerExists);
    }
}
