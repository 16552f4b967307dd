use super::template_error::{MAX_RANGE_DEPTH, MAX_TEMPLATE_LEN};
use super::*;
use serde_json::{Value, json};

fn list() -> Value {
    json!({"kind": "List", "items": [
        {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web", "tier-x": "1"}},
         "status": {"phase": "Succeeded", "attempt": 2,
                    "conditions": [{"type": "Ready", "status": "True"}, {"type": "Failed", "status": "False"}]}},
        {"metadata": {"name": "b", "labels": {}}, "status": {"phase": "Failed", "attempt": 1, "conditions": []}}
    ]})
}

fn render(template: &str) -> String {
    Template::parse(template).unwrap().render(&list())
}

#[test]
fn kubectl_paths_select_like_kubectl() {
    assert_eq!(render("{.items[*].metadata.name}"), "a b");
    assert_eq!(render("{$.items[0].status.phase}"), "Succeeded");
    assert_eq!(render("{.items[-1].metadata.name}"), "b");
    assert_eq!(render("{.items[*].status.attempt}"), "2 1");
    assert_eq!(render("{..phase}"), "Succeeded Failed");
    assert_eq!(render("{.kind}"), "List");
    assert_eq!(
        render("{.items[0].metadata.labels.app\\.kubernetes\\.io/name}"),
        "web"
    );
    assert_eq!(render("{.items[0].metadata.labels.tier-x}"), "1");
    assert_eq!(
        render("{.items[0].status.conditions[?(@.type==\"Ready\")].status}"),
        "True"
    );
    assert_eq!(render("{.items[1].metadata.labels}"), "{}");
}

#[test]
fn text_literals_and_missing_fields() {
    assert_eq!(
        render("names: {.items[*].metadata.name}{\"\\n\"}"),
        "names: a b\n"
    );
    assert_eq!(render("[{.nothing.here}]"), "[]");
    assert_eq!(render("{'single'}"), "single");
}

#[test]
fn range_walks_each_item() {
    assert_eq!(
        render("{range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}"),
        "a=Succeeded\nb=Failed\n"
    );
    assert_eq!(
        render("{range .items}{.metadata.name}{$.kind};{end}"),
        "aList;bList;"
    );
    assert_eq!(
        render("{range .items[*]}{range .status.conditions[*]}{.type},{end}|{end}"),
        "Ready,Failed,||"
    );
}

#[test]
fn bad_templates_say_what_is_wrong() {
    for (template, expected) in [
        ("", TemplateError::Empty),
        ("{.a", TemplateError::Unclosed { at: 1 }),
        ("x{}", TemplateError::EmptyExpression { at: 2 }),
        ("{end}", TemplateError::EndWithoutRange),
        (
            "{range .items[*]}{.a}",
            TemplateError::RangeWithoutEnd {
                path: ".items[*]".into(),
            },
        ),
        ("{\"abc}", TemplateError::Unclosed { at: 1 }),
        (
            "{\"a\"b}",
            TemplateError::BadString {
                literal: "\"a\"b".into(),
            },
        ),
    ] {
        assert_eq!(Template::parse(template), Err(expected), "{template}");
    }
    for template in [
        "{.items[}",
        "{.a..}",
        "{.a b}",
        "{.items[?(@.x==)]}",
        "{.a.}",
    ] {
        let error = Template::parse(template).unwrap_err();
        assert!(
            matches!(error, TemplateError::InvalidPath { .. }),
            "{template}: {error:?}"
        );
    }
    let deep = "{range .a}".repeat(MAX_RANGE_DEPTH + 1);
    assert_eq!(Template::parse(&deep), Err(TemplateError::TooDeep));
}

#[test]
fn numbers_beyond_rfc_9535_are_refused_not_overflowed() {
    for path in [
        "{.a[-9223372036854775808]}",
        "{.a[0:1:9223372036854775807]}",
    ] {
        let error = Template::parse(path).expect_err(path).to_string();
        assert!(error.contains("out of range"), "{path}: {error}");
    }
    assert!(Template::parse("{.a['9223372036854775808']}").is_ok());
}

#[test]
fn no_input_panics() {
    let odd = [
        "{",
        "}",
        "{{}}",
        "{[}",
        "{]}",
        "{.[}",
        "{..}",
        "{...}",
        "{$$}",
        "{@@}",
        "{.a[-0:0:0]}",
        "{.a[::-1]}",
        "{.a[999999999999999999999]}",
        "{.a['}",
        "{.a[\"\\\"]}",
        "{\\}",
        "{range}",
        "{range }",
        "{end }",
        "{.a\\}",
        "{.\u{1b}[31m}",
        "{\"\\",
    ];
    for template in odd {
        if let Ok(parsed) = Template::parse(template) {
            let _ = parsed.render(&list());
        }
    }
    let nested = format!("{{.a{}}}", "[?(@".repeat(500));
    assert!(Template::parse(&nested).is_err());
    assert_eq!(
        Template::parse(&"x".repeat(MAX_TEMPLATE_LEN + 1)),
        Err(TemplateError::TooLong)
    );
}

#[test]
fn paths_without_a_leading_dot_read_as_if_they_had_one() {
    let path = Path::parse("metadata.name").unwrap();
    let item = &list()["items"][0];
    assert_eq!(path.select(item, item), [&json!("a")]);
    assert_eq!(Path::parse("@").unwrap().select(item, item), [item]);
    assert_eq!(Path::parse(".").unwrap().select(item, item), [item]);
}
