//! The result table a report prints in the terminal.

use crate::report::{CaseResult, Report};

/// How many characters of an answer or a reason the table shows.
const EXCERPT: usize = 48;

impl Report {
    /// The results as a table of plain text: one row per case (its id, PASS or FAIL,
    /// each scorer's value, `-` where a scorer does not apply, `err` where it could
    /// not score, and the answer or why it failed), then the totals and each scorer's
    /// mean.
    ///
    /// ```text
    /// case       result  exact  contains  notes
    /// capital    PASS    1.00   1.00      Paris
    /// weather    FAIL    -      0.00      contains: no "Oslo" in the answer
    /// ```
    pub fn table(&self) -> String {
        let mut header = vec!["case".to_owned(), "result".to_owned()];
        header.extend(self.scorers.iter().cloned());
        header.push("notes".to_owned());
        let rows: Vec<Vec<String>> = self.cases.iter().map(|c| self.row(c)).collect();
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        if !self.label.is_empty() {
            out.push_str(&format!("{} on {}\n", self.label, self.dataset));
        } else {
            out.push_str(&format!("{}\n", self.dataset));
        }
        for row in std::iter::once(&header).chain(&rows) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, width))| {
                    if i + 1 == row.len() {
                        cell.clone()
                    } else {
                        pad(cell, *width)
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        let summary = &self.summary;
        out.push_str(&format!(
            "{} of {} passed, {} failed ({} did not run)",
            summary.passed, summary.cases, summary.failed, summary.errors
        ));
        let means: Vec<String> = self
            .scorers
            .iter()
            .filter_map(|s| summary.means.get(s).map(|m| format!("{s} {m:.2}")))
            .collect();
        if !means.is_empty() {
            out.push_str(&format!("; means: {}", means.join(", ")));
        }
        out.push('\n');
        out
    }

    fn row(&self, case: &CaseResult) -> Vec<String> {
        let mut row = vec![
            case.id.clone(),
            if case.passed { "PASS" } else { "FAIL" }.to_owned(),
        ];
        for scorer in &self.scorers {
            row.push(match case.scores.get(scorer) {
                None => "-".to_owned(),
                Some(score) if score.error.is_some() => "err".to_owned(),
                Some(score) => format!("{:.2}", score.value),
            });
        }
        let notes = if case.passed {
            case.answer.clone()
        } else {
            case.why()
        };
        row.push(excerpt(&notes));
        row
    }
}

fn pad(cell: &str, width: usize) -> String {
    let count = cell.chars().count();
    format!("{cell}{}", " ".repeat(width.saturating_sub(count)))
}

/// The first [`EXCERPT`] characters of `text` on one line.
fn excerpt(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= EXCERPT {
        return line;
    }
    let mut cut: String = line.chars().take(EXCERPT - 1).collect();
    cut.push('…');
    cut
}
