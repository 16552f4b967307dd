use serde_json::{Map, json};

use super::compare::digest;
use super::findings;
use super::scalars::same_scalar_at;
use super::*;
use crate::installer::release_objects::{MAX_FIELDS, ObjectTrace};
use k8s_openapi::jiff::Timestamp;

fn at(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

#[test]
fn a_check_is_due_after_an_attempt_seen_ending_and_then_once_per_interval() {
    let since = at(1_000);
    let due = |last: Option<i64>, finished: i64, now: i64, interval: u64| {
        content_check_due(
            interval,
            last.map(at),
            Some(at(finished)),
            since,
            at(now),
            "u",
        )
    };
    // The attempt ended while the edge was watched: at once.
    assert_eq!(due(None, 1_100, 1_101, 1800), Some(CheckDue::AfterAttempt));
    // An attempt that ended in the minute before the watching began: at once too.
    assert_eq!(due(None, 950, 1_001, 1800), Some(CheckDue::AfterAttempt));
    // Checked: not before the interval is over.
    assert_eq!(due(Some(1_101), 1_100, 2_900, 1800), None);
    assert_eq!(
        due(Some(1_101), 1_100, 2_901, 1800),
        Some(CheckDue::Periodic)
    );
    // Never with an interval of 0.
    assert_eq!(due(None, 1_100, 9_999, 0), None);
}

#[test]
fn after_a_restart_checks_are_spread_over_the_interval() {
    let since = at(1_000);
    let due_at = |uid: &str| {
        (0..1800)
            .find(|s| {
                content_check_due(1800, None, Some(at(10)), since, at(1_000 + s), uid)
                    == Some(CheckDue::Periodic)
            })
            .unwrap()
    };
    let offsets: std::collections::BTreeSet<i64> =
        (0..200).map(|i| due_at(&format!("uid-{i}"))).collect();
    // Two hundred releases restarted together fall on many different seconds.
    assert!(offsets.len() > 150, "{}", offsets.len());
}

#[test]
fn fields_the_chart_sets_are_compared_and_additions_beside_them_are_not() {
    let expected = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "web", "image": "web:1", "resources": {"limits": {"cpu": 0.5, "memory": "1Gi"}},
             "args": ["--a", "--b"], "env": []}
        ]}}}
    });
    let live = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "uid": "1", "labels": {"app": "web", "extra": "x"},
                      "managedFields": [{"manager": "helm"}]},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "sidecar", "image": "mesh:1"},
            {"name": "web", "image": "web:1", "imagePullPolicy": "IfNotPresent",
             "resources": {"limits": {"cpu": "500m", "memory": "1073741824"}}, "args": ["--a", "--b"]}
        ]}}},
        "status": {"replicas": 1}
    });
    assert_eq!(differing_fields(&expected, &live), (vec![], false));
    let fields = |found: (Vec<Difference>, bool)| -> Vec<String> {
        found.0.into_iter().map(|d| d.field).collect()
    };

    let mut edited = live.clone();
    edited["spec"]["template"]["spec"]["containers"][1]["image"] = json!("evil:1");
    edited["spec"]["template"]["spec"]["containers"][1]["args"] = json!(["--a"]);
    edited["metadata"]["labels"]["app"] = json!("other");
    assert_eq!(
        fields(differing_fields(&expected, &edited)),
        [
            "metadata.labels.app",
            "spec.template.spec.containers[name=web].args",
            "spec.template.spec.containers[name=web].image",
        ]
    );
    let mut removed = live.clone();
    removed["spec"].as_object_mut().unwrap().remove("replicas");
    assert_eq!(
        fields(differing_fields(&expected, &removed)),
        ["spec.replicas"]
    );
}

#[test]
fn many_differences_are_bounded() {
    let data: Map<String, Value> = (0..100).map(|i| (format!("k{i:02}"), json!("a"))).collect();
    let expected = json!({"data": data});
    let (fields, more) = differing_fields(&expected, &json!({"data": {}}));
    // Far more than a drift names, so filters applied later cannot hide one.
    assert_eq!((fields.len(), more), (findings::MAX_COMPARED, true));
}

#[test]
fn quantities_compare_by_amount_only_where_a_quantity_is() {
    let cpu = "spec.template.spec.containers[name=web].resources.limits.cpu";
    assert!(same_scalar_at(cpu, &json!(0.5), &json!("500m")));
    assert!(same_scalar_at(
        "spec.resources.requests.storage",
        &json!("2Gi"),
        &json!("2147483648")
    ));
    assert!(same_scalar_at("spec.hard.cpu", &json!("1e3"), &json!("1k")));
    assert!(same_scalar_at(
        "spec.volumes[name=a].emptyDir.sizeLimit",
        &json!("1Gi"),
        &json!("1073741824")
    ));
    assert!(!same_scalar_at(cpu, &json!("1Gi"), &json!("1G")));
    // Anywhere else a string is a string: an account number, a threshold, a setting.
    assert!(!same_scalar_at("data.one", &json!("1"), &json!("1000m")));
    assert!(!same_scalar_at(
        "data.threshold",
        &json!("0.5"),
        &json!("5e-1")
    ));
    assert!(!same_scalar_at(
        "data.accountId",
        &json!("123456789012"),
        &json!("123456789099")
    ));
    assert!(!same_scalar_at(
        "data.limits.cpu",
        &json!("1"),
        &json!("1000m")
    ));
    assert!(!same_scalar_at(
        "metadata.labels.cpu",
        &json!("1"),
        &json!("1000m")
    ));
    // Numbers by value.
    assert!(same_scalar_at("spec.replicas", &json!(1), &json!(1.0)));
    assert!(!same_scalar_at(
        "spec.ports[0].targetPort",
        &json!("8080"),
        &json!(80)
    ));
    assert!(!same_scalar_at("data.x", &json!("web"), &json!("web2")));
}

#[test]
fn plain_scalars_compare_as_go_s_yaml_reads_them() {
    let mode = "spec.volumes[name=cfg].configMap.defaultMode";
    assert!(same_scalar_at(mode, &json!("0644"), &json!(420)));
    assert!(same_scalar_at(mode, &json!("0o644"), &json!(420)));
    assert!(same_scalar_at(mode, &json!("0x1A4"), &json!(420)));
    assert!(same_scalar_at(mode, &json!("1_000"), &json!(1000)));
    assert!(!same_scalar_at(mode, &json!("0644"), &json!(644)));
    assert!(same_scalar_at("spec.suspend", &json!("yes"), &json!(true)));
    assert!(same_scalar_at("spec.suspend", &json!("Off"), &json!(false)));
    assert!(!same_scalar_at(
        "spec.suspend",
        &json!("maybe"),
        &json!(true)
    ));
}

#[test]
fn a_manifest_document_is_parsed_within_bounds() {
    let body =
        expected_body("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n")
            .unwrap();
    assert_eq!(body["data"]["k"], "v");
    let laughs = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
        b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
        d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
        f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
        h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
    let started = std::time::Instant::now();
    assert!(expected_body(laughs).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    // Merge keys are applied, as helm's YAML reading applies them.
    let merged =
        expected_body("base: &base\n  a: 1\n  b: 2\nthing:\n  <<: *base\n  b: 3\n").unwrap();
    assert_eq!(merged["thing"], json!({"a": 1, "b": 3}));
    let deep = "[".repeat(10_000);
    assert!(expected_body(&deep).is_err());
    let large = format!("data:\n  k: {}\n", "x".repeat(MAX_DOCUMENT_BYTES));
    assert!(expected_body(&large).unwrap_err().contains("above"));
}

#[test]
fn only_the_charts_own_annotation_opts_out() {
    assert!(opted_out(
        &json!({"metadata": {"annotations": {ANNOTATION_DRIFT: "ignore"}}})
    ));
    assert!(!opted_out(
        &json!({"metadata": {"annotations": {ANNOTATION_DRIFT: "watch"}}})
    ));
    assert!(!opted_out(&json!({"metadata": {}})));
}

#[test]
fn a_secrets_tests_hold_what_the_api_server_stores() {
    let expected = json!({
        "type": "Opaque",
        "metadata": {"labels": {"app.kubernetes.io/name": "p"}},
        "data": {"a": "aGk=", "b": "aGk=\n"},
        "stringData": {"b": "there", "c": "x"}
    });
    let tests = secret_tests(&expected).unwrap();
    let shown: Vec<(&str, &str, Value)> = tests
        .iter()
        .map(|t| (t.pointer.as_str(), t.field.as_str(), t.value.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            ("/type", "type", json!("Opaque")),
            (
                "/metadata/labels/app.kubernetes.io~1name",
                "metadata.labels.app.kubernetes.io/name",
                json!("p")
            ),
            ("/data/a", "data.a", json!("aGk=")),
            // stringData wins over data, as the API server merges them.
            ("/data/b", "data.b", json!("dGhlcmU=")),
            ("/data/c", "data.c", json!("eA==")),
        ]
    );
    let patch = secret_patch(&tests.iter().collect::<Vec<_>>());
    assert_eq!(patch.as_array().unwrap().len(), 6);
    assert_eq!(patch[5]["op"], "replace");
    assert_eq!(patch[5]["path"], "/metadata/name");
    assert!(secret_tests(&json!({"data": {"a": "not base64!"}})).is_err());
    let many: Map<String, Value> = (0..600).map(|i| (format!("k{i}"), json!("eA=="))).collect();
    assert!(
        secret_tests(&json!({"data": many}))
            .unwrap_err()
            .contains("above")
    );
}

#[test]
fn the_refusal_says_whether_the_tests_held() {
    let renamed = format!(
        "the name of the object ({SENTINEL_NAME}) does not match the name on the URL (key)"
    );
    assert_eq!(test_answer(400, "BadRequest", &renamed), TestAnswer::Held);
    assert_eq!(
        test_answer(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request"
        ),
        TestAnswer::Failed
    );
    assert_eq!(
        test_answer(403, "Forbidden", "forbidden"),
        TestAnswer::Unknown
    );
    assert_eq!(
        test_answer(400, "BadRequest", "another"),
        TestAnswer::Unknown
    );
}

/// Runs a search where the tests in `failing` fail; the failed found and questions asked.
fn search(tests: usize, failing: &[usize]) -> (Vec<usize>, usize) {
    let mut search = FailedTestSearch::new(tests);
    let mut asked = 0;
    while let Some(group) = search.next_group() {
        asked += 1;
        let held = !failing.iter().any(|f| group.contains(f));
        search.answer(held);
    }
    (search.failed().to_vec(), asked)
}

#[test]
fn failing_tests_are_found_by_halves() {
    assert_eq!(search(10, &[]), (vec![], 1));
    assert_eq!(search(1, &[0]), (vec![0], 1));
    let (found, asked) = search(512, &[300]);
    assert_eq!(found, [300]);
    // Each level asks about both halves of the group that failed: 1 + 2 x 9.
    assert_eq!(asked, 19);
    assert_eq!(search(8, &[1, 2, 7]).0, [1, 2, 7]);
    // At most MAX_FIELDS are looked for.
    let every: Vec<usize> = (0..40).collect();
    assert_eq!(search(40, &every).0.len(), MAX_FIELDS);
    assert_eq!(search(0, &[]), (vec![], 0));
}

#[test]
fn a_difference_says_whether_helm_alone_wrote_the_field_and_what_is_there() {
    let expected = json!({"data": {"greeting": "h\u{85}i", "other": "a"}, "spec": {"containers": [{"name": "web", "image": "web:1"}]}});
    let live = json!({
        "metadata": {"managedFields": [
            {"manager": "helm", "operation": "Apply", "fieldsV1": {"f:data": {"f:greeting": {}}, "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}}}}},
            {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:data": {"f:other": {}}}},
            {"manager": "kubelet", "operation": "Update", "subresource": "status", "fieldsV1": {"f:data": {"f:greeting": {}}}}
        ]},
        "data": {"greeting": "h i", "other": "b"},
        "spec": {"containers": [{"name": "web", "image": "web:2"}]}
    });
    let (found, _) = differing_fields(&expected, &live);
    let shown: Vec<(&str, bool)> = found
        .iter()
        .map(|d| (d.field.as_str(), d.helm_only))
        .collect();
    assert_eq!(
        shown,
        [
            ("data.greeting", true),
            ("data.other", false),
            ("spec.containers[name=web].image", true),
        ]
    );
    assert_eq!(found[0].live_digest, Some(digest(&json!("h i"))));
    assert_ne!(found[0].live_digest, found[1].live_digest);
    // A field held whole by an entry above it; an index cannot be told.
    let whole = json!([{"manager": "helm", "fieldsV1": {"f:spec": {"f:args": {}}}}]);
    assert!(written_by_helm_alone(&whole, "spec.args"));
    assert!(!written_by_helm_alone(&whole, "spec.ports[0].port"));
    assert!(!written_by_helm_alone(&json!([]), "spec.args"));
}

#[test]
fn a_secret_field_is_helm_s_alone_when_no_traced_edit_touches_it() {
    use crate::installer::release_objects::FieldEdit;
    let trace = |fields: &[&str], more: bool| ObjectTrace {
        edits: vec![FieldEdit {
            manager: "kubectl-patch".into(),
            operation: "Update".into(),
            time: None,
            fields: fields.iter().map(|f| (*f).to_owned()).collect(),
            more_fields: more,
            versions: Default::default(),
        }],
        ..Default::default()
    };
    assert!(helm_alone_by_trace(
        Some(&ObjectTrace::default()),
        "data.key"
    ));
    assert!(helm_alone_by_trace(
        Some(&trace(&["data.other"], false)),
        "data.key"
    ));
    assert!(!helm_alone_by_trace(
        Some(&trace(&["data.key"], false)),
        "data.key"
    ));
    assert!(!helm_alone_by_trace(
        Some(&trace(&["data"], false)),
        "data.key"
    ));
    assert!(!helm_alone_by_trace(
        Some(&trace(&["data.other"], true)),
        "data.key"
    ));
    assert!(!helm_alone_by_trace(None, "data.key"));
}

/// An entry of `metadata.managedFields`.
fn entry(manager: &str, operation: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "fieldsV1": fields})
}

#[test]
fn what_the_chart_leaves_empty_or_sets_whole_is_compared_whole() {
    // A NetworkPolicy's deny-all: an empty selector and no ingress rule, applied by helm
    // (an atomic list is owned as a leaf).
    let expected = json!({"spec": {"podSelector": {}, "ingress": []}});
    let helm_apply = entry(
        "helm",
        "Apply",
        json!({"f:spec": {"f:podSelector": {}, "f:ingress": {}}}),
    );
    let allowed = json!({
        "metadata": {"managedFields": [helm_apply]},
        "spec": {"podSelector": {}, "ingress": [{}]}
    });
    let fields = |found: (Vec<Difference>, bool)| -> Vec<String> {
        found.0.into_iter().map(|d| d.field).collect()
    };
    assert_eq!(
        fields(differing_fields(&expected, &allowed)),
        ["spec.ingress"]
    );
    // A selector added as `helm`: helm's entries claim what the chart does not set.
    let narrowed = json!({
        "metadata": {"managedFields": [
            helm_apply,
            entry("helm", "Update", json!({"f:spec": {"f:podSelector": {"f:matchLabels": {"f:nothing": {}}}}})),
        ]},
        "spec": {"podSelector": {"matchLabels": {"nothing": "here"}}, "ingress": []}
    });
    let found = differing_fields(&expected, &narrowed).0;
    let fields: Vec<(&str, bool)> = found
        .iter()
        .map(|d| (d.field.as_str(), d.helm_only))
        .collect();
    assert_eq!(
        fields,
        [
            // The selector the chart leaves empty holds one now...
            ("spec.podSelector", true),
            // ...and helm's entries claim what the chart does not set: never helm's own.
            ("spec.podSelector.matchLabels", false),
        ]
    );
    // Defaults inside what the chart leaves empty are nobody's, and an empty list the
    // API server dropped (as it drops `ingress: []`, though helm's entry names it) is
    // none: not drift.
    let defaulted = json!({
        "metadata": {"managedFields": [helm_apply]},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}
    });
    assert!(differing_fields(&expected, &defaulted).0.is_empty());
    // A struct left empty that the API server fills (a Deployment's strategy) differs,
    // and is helm's alone: the first check after the attempt keeps it as the baseline.
    let strategy = json!({"spec": {"strategy": {}}});
    let filled = json!({
        "metadata": {"managedFields": [entry("helm", "Apply", json!({"f:spec": {"f:strategy": {}}}))]},
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}
    });
    let found = differing_fields(&strategy, &filled).0;
    assert_eq!(
        (found[0].field.as_str(), found[0].helm_only),
        ("spec.strategy", true)
    );
    // A map of strings left empty takes additions beside it.
    let labels = json!({"spec": {"nodeSelector": {}}});
    assert!(
        differing_fields(&labels, &json!({"spec": {"nodeSelector": {"disk": "ssd"}}}))
            .0
            .is_empty()
    );
}

#[test]
fn a_volume_swapped_or_an_item_added_as_helm_is_found() {
    let expected = json!({"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}],
                                   "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}]}]}});
    let helm_apply = entry(
        "helm",
        "Apply",
        json!({"f:spec": {
            "f:volumes": {"k:{\"name\":\"scratch\"}": {".": {}, "f:name": {}, "f:emptyDir": {}}},
            "f:containers": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {},
                "f:env": {"k:{\"name\":\"A\"}": {".": {}, "f:name": {}, "f:value": {}}}}}
        }}),
    );
    let as_helm = entry(
        "helm",
        "Update",
        json!({"f:spec": {
            "f:volumes": {"k:{\"name\":\"scratch\"}": {"f:hostPath": {".": {}, "f:path": {}}}},
            "f:containers": {"k:{\"name\":\"c\"}": {"f:env": {"k:{\"name\":\"MODE\"}": {".": {}, "f:name": {}, "f:value": {}}}}}
        }}),
    );
    let live = json!({
        "metadata": {"managedFields": [helm_apply, as_helm]},
        "spec": {"volumes": [{"name": "scratch", "hostPath": {"path": "/"}}],
                 "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "MODE", "value": "evil"}]}]}
    });
    let mut found: Vec<String> = differing_fields(&expected, &live)
        .0
        .into_iter()
        .map(|d| d.field)
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            "spec.containers[name=c].env[name=MODE]",
            "spec.volumes[name=scratch].hostPath",
        ]
    );
    // A second item of a name the chart sets: the later one wins where it is read.
    let doubled = json!({"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}],
        "containers": [{"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}]}});
    let found: Vec<String> = differing_fields(&expected, &doubled)
        .0
        .into_iter()
        .map(|d| d.field)
        .collect();
    assert_eq!(found, ["spec.containers[name=c].env[name=A]"]);
}

#[test]
fn helm_s_own_marks_are_not_claimed_beyond_the_chart() {
    let expected = json!({"metadata": {"labels": {"app": "a"}}, "data": {"k": "v"}});
    let live = json!({
        "metadata": {
            "labels": {"app": "a", "app.kubernetes.io/managed-by": "Helm"},
            "annotations": {"meta.helm.sh/release-name": "r", "meta.helm.sh/release-namespace": "n"},
            "managedFields": [entry("helm", "Apply", json!({
                "f:metadata": {
                    "f:labels": {"f:app": {}, "f:app.kubernetes.io/managed-by": {}},
                    "f:annotations": {"f:meta.helm.sh/release-name": {}, "f:meta.helm.sh/release-namespace": {}}
                },
                "f:data": {"f:k": {}}
            })), entry("kubectl-edit", "Update", json!({"f:data": {"f:extra": {}}}))]
        },
        "data": {"k": "v", "extra": "by hand"}
    });
    // Another manager's addition is the field managers' to report, not this rule's.
    assert!(differing_fields(&expected, &live).0.is_empty());
}
