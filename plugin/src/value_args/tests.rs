use super::*;
use serde_json::json;

fn set(args: &[&str]) -> Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    Value::Object(build(Map::new(), &[], &args, &[]).unwrap())
}

#[test]
fn set_types_values_like_helm() {
    assert_eq!(
        set(&[
            "a=1", "b=true", "c=false", "d=hello", "e=007", "f=-3", "g=0", "h=", "i=1e3", "j=True"
        ]),
        json!({"a": 1, "b": true, "c": false, "d": "hello", "e": "007", "f": -3, "g": 0, "h": "", "i": "1e3", "j": "True"})
    );
}

#[test]
fn set_reads_decimals_as_numbers() {
    assert_eq!(
        set(&["a=0.5", "b=-1.25", "c=1.", "d=.5", "e=01.5"]),
        json!({"a": 0.5, "b": -1.25, "c": "1.", "d": ".5", "e": "01.5"})
    );
}

#[test]
fn set_string_keeps_strings() {
    let out = build(
        Map::new(),
        &[],
        &[],
        &["a=true,b=0123,c=null,d=1.5".to_owned()],
    )
    .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"a": "true", "b": "0123", "c": "null", "d": "1.5"})
    );
}

#[test]
fn dotted_paths_nest_objects() {
    assert_eq!(
        set(&["ingress.host=example.org", "ingress.tls.enabled=true"]),
        json!({"ingress": {"host": "example.org", "tls": {"enabled": true}}})
    );
}

#[test]
fn commas_separate_assignments_unless_escaped() {
    assert_eq!(
        set(&[r"a=1,b=x\,y", r"c\.d=2"]),
        json!({"a": 1, "b": "x,y", "c.d": 2})
    );
}

#[test]
fn an_equals_sign_in_a_value_is_kept() {
    assert_eq!(set(&["args=--x=1"]), json!({"args": "--x=1"}));
}

#[test]
fn later_assignments_win_and_replace_scalars_in_the_way() {
    assert_eq!(set(&["a=1", "a=2"]), json!({"a": 2}));
    assert_eq!(set(&["a=1", "a.b=2"]), json!({"a": {"b": 2}}));
}

#[test]
fn null_removes_the_path_and_empty_parents() {
    let base = json!({"a": {"b": 1}, "c": 2});
    let Value::Object(base) = base else {
        unreachable!()
    };
    let out = build(base, &[], &["a.b=null".to_owned()], &[]).unwrap();
    assert_eq!(Value::Object(out), json!({"c": 2}));
}

#[test]
fn removing_a_missing_path_changes_nothing() {
    assert_eq!(set(&["a=1", "x.y=null"]), json!({"a": 1}));
}

#[test]
fn malformed_arguments_name_the_flag_and_say_how() {
    for (arg, needle) in [
        ("novalue", "write path=value"),
        ("a[0]=1", "list indexes"),
        ("a={x,y}", "lists are not supported"),
        ("a..b=1", "segment is empty"),
        ("=1", "segment is empty"),
    ] {
        let error = parse_set(arg, Typing::Typed).unwrap_err().to_string();
        assert!(error.starts_with("--set "), "{error}");
        assert!(error.contains(needle), "{arg}: {error}");
    }
}

#[test]
fn files_come_first_then_set_then_set_string() {
    let files = vec![
        ("one.yaml".to_owned(), "a: 1\nb: {c: 2, d: 3}\n".to_owned()),
        ("two.yaml".to_owned(), "b: {c: 20}\n".to_owned()),
    ];
    let out = build(
        Map::new(),
        &files,
        &["a=10".to_owned()],
        &["a=11".to_owned()],
    )
    .unwrap();
    assert_eq!(
        Value::Object(out),
        json!({"a": "11", "b": {"c": 20, "d": 3}})
    );
}

#[test]
fn a_values_file_must_be_a_mapping() {
    let error = parse_file("v.yaml", "- a\n- b\n").unwrap_err().to_string();
    assert_eq!(
        error,
        "values file v.yaml: must be a mapping of values, not a list"
    );
    assert_eq!(parse_file("empty.yaml", "\n").unwrap(), Map::new());
    assert!(parse_file("bad.yaml", "a: [").is_err());
}
