use std::fmt;
use std::path::PathBuf;

/// A configuration problem, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line, 0 when the problem is not tied to a place in the file.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    pub message: String,
}

impl ConfigError {
    /// Locates a byte span of `text` as line and column.
    pub(crate) fn at(
        file: &std::path::Path,
        text: &str,
        span: Option<std::ops::Range<usize>>,
        message: impl Into<String>,
    ) -> Self {
        let (line, column) = match span {
            Some(span) => line_col(text, span.start),
            None => (0, 0),
        };
        Self {
            file: file.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_are_one_based() {
        assert_eq!(line_col("a\nbc\nd", 3), (2, 2));
        assert_eq!(line_col("abc", 0), (1, 1));
    }
}
