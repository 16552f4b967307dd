//! Tables the way kubectl prints them: upper-case headers, columns padded to their widest
//! cell and separated by three spaces, no trailing white space; `-o wide` adds columns.

use std::borrow::Cow;

/// A column: its header and whether it shows only with `-o wide`.
#[derive(Clone, Debug)]
pub struct Column {
    pub header: Cow<'static, str>,
    pub wide_only: bool,
}

/// A column shown in every table output.
pub const fn col(header: &'static str) -> Column {
    Column {
        header: Cow::Borrowed(header),
        wide_only: false,
    }
}

/// A column shown only with `-o wide`.
pub const fn wide(header: &'static str) -> Column {
    Column {
        header: Cow::Borrowed(header),
        wide_only: true,
    }
}

/// A column whose header is only known at run time (`-o custom-columns`).
pub fn named(header: String) -> Column {
    Column {
        header: Cow::Owned(header),
        wide_only: false,
    }
}

/// Rows of cells under columns.
#[derive(Clone, Debug)]
pub struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[Column]) -> Self {
        Self {
            columns: columns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are blank, extra cells are dropped.
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    /// The table's text, ending in a newline; nothing for no rows.
    pub fn render(&self, wide: bool) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        self.render_indented(wide, "")
    }

    /// The rows only, without the header line (`--no-headers`); nothing for no rows.
    pub fn render_rows(&self, wide: bool) -> String {
        if self.rows.is_empty() {
            return String::new();
        }
        self.lines(wide, "", false)
    }

    /// The table's text with every line indented (for tables inside a detail view).
    pub fn render_indented(&self, wide: bool, indent: &str) -> String {
        self.lines(wide, indent, true)
    }

    fn lines(&self, wide: bool, indent: &str, headers: bool) -> String {
        let shown: Vec<usize> = (0..self.columns.len())
            .filter(|&i| wide || !self.columns[i].wide_only)
            .collect();
        let cell = |row: &Vec<String>, i: usize| -> String {
            // One line per row whatever the text: a newline would break the columns. Cells
            // carry text from the cluster (Events, annotations through custom columns):
            // no escape sequence reaches the terminal.
            row.get(i)
                .map(|c| providers_shared::text::for_terminal(c).replace(['\n', '\r', '\t'], " "))
                .unwrap_or_default()
        };
        let mut widths: Vec<usize> = shown
            .iter()
            .map(|&i| {
                if headers {
                    self.columns[i].header.chars().count()
                } else {
                    0
                }
            })
            .collect();
        for row in &self.rows {
            for (width, &column) in widths.iter_mut().zip(&shown) {
                *width = (*width).max(cell(row, column).chars().count());
            }
        }
        let mut out = String::new();
        let header: Vec<String> = shown
            .iter()
            .map(|&i| self.columns[i].header.to_string())
            .collect();
        for cells in std::iter::once(header).filter(|_| headers).chain(
            self.rows
                .iter()
                .map(|row| shown.iter().map(|&i| cell(row, i)).collect()),
        ) {
            let mut line = String::from(indent);
            for (position, (text, width)) in cells.iter().zip(&widths).enumerate() {
                if position + 1 == cells.len() {
                    line.push_str(text);
                } else {
                    line.push_str(text);
                    line.push_str(&" ".repeat(width - text.chars().count() + 3));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Aligned `Label:  value` lines for a detail view.
#[derive(Clone, Debug, Default)]
pub struct Fields {
    lines: Vec<(String, String)>,
}

impl Fields {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add(&mut self, label: &str, value: impl Into<String>) -> &mut Self {
        self.lines.push((label.to_owned(), value.into()));
        self
    }

    pub fn render(&self) -> String {
        let width = self
            .lines
            .iter()
            .map(|(l, _)| l.chars().count() + 1)
            .max()
            .unwrap_or(0);
        let mut out = String::new();
        for (label, value) in &self.lines {
            let label = format!("{label}:");
            let line = format!("{label:<width$}  {value}");
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// A dash for an absent value, as kubectl prints `<none>` or blank; we use `-`.
pub fn or_dash(value: Option<impl ToString>) -> String {
    value
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new(&[col("NAME"), wide("EXTRA"), col("PHASE")]);
        table.push(vec!["a".into(), "x".into(), "Succeeded".into()]);
        table.push(vec!["longer-name".into(), "yy".into(), "Failed".into()]);
        table
    }

    #[test]
    fn columns_pad_to_the_widest_cell_with_three_spaces() {
        assert_eq!(
            sample().render(false),
            "NAME          PHASE\na             Succeeded\nlonger-name   Failed\n"
        );
    }

    #[test]
    fn cells_from_the_cluster_carry_no_escape_sequences() {
        let mut table = Table::new(&[col("REASON"), col("MESSAGE")]);
        table.push(vec![
            "Ready\u{1b}]52;c;cm0gLXJmIH4=\u{7}".into(),
            "\u{1b}[2K\u{1b}[1Afaked\nline".into(),
        ]);
        let out = table.render(false);
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(
            out.contains("Ready") && out.contains("faked line"),
            "{out:?}"
        );
    }

    #[test]
    fn wide_adds_its_columns() {
        assert_eq!(
            sample().render(true),
            "NAME          EXTRA   PHASE\na             x       Succeeded\nlonger-name   yy      Failed\n"
        );
    }

    #[test]
    fn rows_alone_pad_to_their_own_cells() {
        assert_eq!(
            sample().render_rows(false),
            "a             Succeeded\nlonger-name   Failed\n"
        );
        let mut table = Table::new(&[named("Who".into()), col("N")]);
        table.push(vec!["x".into(), "1".into()]);
        assert_eq!(table.render(false), "Who   N\nx     1\n");
        assert_eq!(table.render_rows(false), "x   1\n");
    }

    #[test]
    fn no_rows_prints_nothing() {
        assert_eq!(Table::new(&[col("NAME")]).render(false), "");
    }

    #[test]
    fn cells_stay_on_one_line_and_lines_have_no_trailing_space() {
        let mut table = Table::new(&[col("A"), col("B")]);
        table.push(vec!["multi\nline".into(), String::new()]);
        assert_eq!(table.render(false), "A            B\nmulti line\n");
    }

    #[test]
    fn fields_align_their_values() {
        let mut fields = Fields::new();
        fields
            .add("Name", "demo")
            .add("Namespace", "org-a")
            .add("Empty", "");
        assert_eq!(
            fields.render(),
            "Name:       demo\nNamespace:  org-a\nEmpty:\n"
        );
    }
}
