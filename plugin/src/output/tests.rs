use super::*;

fn sample() -> Rendered {
    Rendered {
        data: json!({"a": {"b": [1, 2]}}),
        table: "T\n".into(),
        wide: "W\n".into(),
        names: vec!["x.g/a".into(), "x.g/b".into()],
        empty: None,
        headers: false,
        rows_at: None,
    }
}

fn listed() -> Rendered {
    Rendered {
        data: list(vec![
            json!({"metadata": {"name": "a"}, "status": {"phase": "Failed"}}),
            json!({"metadata": {"name": "b"}}),
        ]),
        table: "NAME   PHASE\na      Failed\nb      -\n".into(),
        wide: "NAME   PHASE   X\na      Failed  1\nb      -       2\n".into(),
        names: vec![],
        empty: Some("No things found.".into()),
        headers: true,
        rows_at: Some("items"),
    }
}

fn format(text: &str) -> OutputFormat {
    crate::output_format::parse_output(text).unwrap()
}

#[test]
fn no_headers_drops_the_header_line_of_tables_only() {
    let rendered = listed();
    assert_eq!(
        printed_with(OutputFormat::Table, true, &rendered).0,
        "a      Failed\nb      -\n"
    );
    assert_eq!(
        printed_with(OutputFormat::Wide, true, &rendered).0,
        "a      Failed  1\nb      -       2\n"
    );
    // A detail view has no header to drop.
    assert_eq!(printed_with(OutputFormat::Table, true, &sample()).0, "T\n");
}

#[test]
fn jsonpath_reads_the_json_that_json_prints() {
    let rendered = listed();
    assert_eq!(
        printed(format("jsonpath={.items[*].metadata.name}"), &rendered).0,
        "a b"
    );
    assert_eq!(printed(format("jsonpath={.kind}"), &sample()).0, "");
}

#[test]
fn custom_columns_print_a_row_per_listed_object() {
    let rendered = listed();
    let columns = format("custom-columns=NAME:.metadata.name,PHASE:.status.phase");
    assert_eq!(
        printed(columns.clone(), &rendered).0,
        "NAME   PHASE\na      Failed\nb      <none>\n"
    );
    assert_eq!(
        printed_with(columns.clone(), true, &rendered).0,
        "a   Failed\nb   <none>\n"
    );
    let empty = Rendered {
        data: list(vec![]),
        ..listed()
    };
    assert_eq!(
        printed(columns, &empty),
        (String::new(), "No things found.\n".into())
    );
    // A single object is one row.
    assert_eq!(
        printed(format("custom-columns=B:.a.b"), &sample()).0,
        "B\n[1,2]\n"
    );
}

#[test]
fn custom_columns_of_a_result_without_objects_is_an_error() {
    let rendered = Rendered {
        data: json!({"attempts": [1, 2]}),
        rows_at: Some("attempts"),
        ..sample()
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let error = print(
        &format("custom-columns=A:.a"),
        false,
        &rendered,
        &mut out,
        &mut err,
    )
    .unwrap_err();
    assert!(
        error.to_string().starts_with("-o custom-columns:"),
        "{error}"
    );
}

fn printed(format: OutputFormat, rendered: &Rendered) -> (String, String) {
    printed_with(format, false, rendered)
}

fn printed_with(format: OutputFormat, no_headers: bool, rendered: &Rendered) -> (String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    print(&format, no_headers, rendered, &mut out, &mut err).unwrap();
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
    )
}

#[test]
fn each_format_prints_its_own_form() {
    let rendered = sample();
    assert_eq!(printed(OutputFormat::Table, &rendered).0, "T\n");
    assert_eq!(printed(OutputFormat::Wide, &rendered).0, "W\n");
    assert_eq!(printed(OutputFormat::Name, &rendered).0, "x.g/a\nx.g/b\n");
    assert_eq!(
        printed(OutputFormat::Yaml, &rendered).0,
        "a:\n  b:\n  - 1\n  - 2\n"
    );
    assert_eq!(
        printed(OutputFormat::Json, &rendered).0,
        "{\n    \"a\": {\n        \"b\": [\n            1,\n            2\n        ]\n    }\n}\n"
    );
}

#[test]
fn an_empty_table_says_so_on_stderr() {
    let rendered = Rendered {
        empty: Some("No workspaces found in namespace org-a.".into()),
        ..Rendered::default()
    };
    assert_eq!(
        printed(OutputFormat::Table, &rendered),
        (
            String::new(),
            "No workspaces found in namespace org-a.\n".into()
        )
    );
}

#[test]
fn names_are_kind_dot_group() {
    assert_eq!(
        resource_name("Workspace", "providers.platform.dev", "demo"),
        "workspace.providers.platform.dev/demo"
    );
}
