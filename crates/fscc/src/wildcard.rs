//! QUERY_DIRECTORY search patterns: MS-FSA 2.1.4.4 "Algorithm for Determining if a FileName Is
//! in an Expression", with the DOS wildcards of MS-FSA 2.1.4.3.
//!
//! The expression is run as a set of positions in the pattern, advanced once per name
//! character, so the cost is at most (name length × pattern length) whatever the pattern:
//! `*a*a*a*a*b` cannot backtrack exponentially.

/// `<`: zero or more characters, but not the name's last period.
const DOS_STAR: char = '<';
/// `>`: one character, or none at a period or at the end of the name.
const DOS_QM: char = '>';
/// `"`: a period, or nothing at the end of the name.
const DOS_DOT: char = '"';

/// Whether `expr` contains any wildcard (MS-FSA 2.1.4.3): `*`, `?`, `<`, `>` or `"`.
pub fn has_wildcards(expr: &str) -> bool {
    expr.chars()
        .any(|c| matches!(c, '*' | '?' | DOS_STAR | DOS_QM | DOS_DOT))
}

/// Whether `name` matches `expr` (MS-FSA 2.1.4.4). With `ignore_case`, characters compare
/// under Unicode simple case folding.
pub fn is_name_in_expression(expr: &str, name: &str, ignore_case: bool) -> bool {
    Expression::new(expr, ignore_case).matches(name)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Star,
    DosStar,
    Qm,
    DosQm,
    DosDot,
    /// A literal character, already folded when matching ignores case.
    Char(char),
}

/// A parsed search pattern, to match many names against (one QUERY_DIRECTORY listing).
#[derive(Debug, Clone)]
pub struct Expression {
    tokens: Vec<Token>,
    ignore_case: bool,
    /// Name characters every match consumes at least (literals and `?`).
    min_chars: usize,
}

fn fold(c: char) -> char {
    unicode_case_mapping::case_folded(c)
        .and_then(|u| char::from_u32(u.get()))
        .unwrap_or(c)
}

impl Expression {
    /// Parses `expr`.
    pub fn new(expr: &str, ignore_case: bool) -> Self {
        let mut tokens: Vec<Token> = Vec::with_capacity(expr.len());
        for c in expr.chars() {
            let token = match c {
                '*' => Token::Star,
                '?' => Token::Qm,
                DOS_STAR => Token::DosStar,
                DOS_QM => Token::DosQm,
                DOS_DOT => Token::DosDot,
                c if ignore_case => Token::Char(fold(c)),
                c => Token::Char(c),
            };
            // A run of `*` matches what one `*` does; collapsing keeps the state set small.
            if token == Token::Star && tokens.last() == Some(&Token::Star) {
                continue;
            }
            tokens.push(token);
        }
        let min_chars = tokens
            .iter()
            .filter(|t| matches!(t, Token::Char(_) | Token::Qm))
            .count();
        Self {
            tokens,
            ignore_case,
            min_chars,
        }
    }

    /// The name character as literals were stored: folded when ignoring case.
    fn key(&self, c: char) -> char {
        if self.ignore_case { fold(c) } else { c }
    }

    /// Whether `name` matches the expression.
    pub fn matches(&self, name: &str) -> bool {
        // Part 1: the special cases.
        match (self.tokens.is_empty(), name.is_empty()) {
            (true, true) => return true,
            (true, false) | (false, true) => return false,
            (false, false) => {}
        }
        if matches!(
            self.tokens.as_slice(),
            [Token::Star] | [Token::Star, Token::Char('.'), Token::Star]
        ) {
            return true;
        }
        if let [Token::Star, rest @ ..] = self.tokens.as_slice()
            && rest.iter().all(|t| matches!(t, Token::Char(_)))
        {
            return self.ends_with(name, rest);
        }
        if name.chars().count() < self.min_chars {
            return false;
        }
        self.run(name)
    }

    /// `*` followed by literals: compare the tail of the name.
    fn ends_with(&self, name: &str, literals: &[Token]) -> bool {
        let mut chars = name.chars().rev();
        for t in literals.iter().rev() {
            match (t, chars.next()) {
                (Token::Char(p), Some(c)) if *p == self.key(c) => {}
                _ => return false,
            }
        }
        true
    }

    /// Part 2: advances the set of pattern positions over the name.
    fn run(&self, name: &str) -> bool {
        let states = self.tokens.len() + 1;
        let words = states.div_ceil(64);
        let mut on_stack = [0u64; 8];
        let mut on_heap = Vec::new();
        let storage: &mut [u64] = if words * 2 <= on_stack.len() {
            &mut on_stack
        } else {
            on_heap.resize(words * 2, 0);
            &mut on_heap
        };
        let Some((cur, next)) = storage.split_at_mut_checked(words) else {
            return false;
        };
        let mut cur = StateSet(cur);
        let mut next = StateSet(next.get_mut(..words).unwrap_or_default());
        let last_period = name.rfind('.');
        cur.insert(0);
        for (at, c) in name.char_indices() {
            self.close(&mut cur, Some(c));
            let key = self.key(c);
            next.clear();
            let consumable_period = last_period.is_some_and(|p| p > at);
            for (state, token) in self.tokens.iter().enumerate() {
                if !cur.contains(state) {
                    continue;
                }
                match *token {
                    Token::Star => next.insert(state),
                    Token::DosStar if c != '.' || consumable_period => next.insert(state),
                    Token::DosStar => {}
                    Token::Qm => next.insert(state + 1),
                    Token::DosQm if c != '.' => next.insert(state + 1),
                    Token::DosDot if c == '.' => next.insert(state + 1),
                    Token::DosQm | Token::DosDot => {}
                    Token::Char(p) if p == key => next.insert(state + 1),
                    Token::Char(_) => {}
                }
            }
            if next.is_empty() {
                return false;
            }
            core::mem::swap(&mut cur, &mut next);
        }
        self.close(&mut cur, None);
        cur.contains(self.tokens.len())
    }

    /// Adds the positions reachable without consuming a character, given the next name
    /// character (`None` at the end of the name). Moves only go forward by one, so one pass
    /// in order suffices.
    fn close(&self, set: &mut StateSet<'_>, lookahead: Option<char>) {
        for (state, token) in self.tokens.iter().enumerate() {
            if !set.contains(state) {
                continue;
            }
            let skip = match token {
                Token::Star | Token::DosStar => true,
                Token::DosQm => matches!(lookahead, None | Some('.')),
                Token::DosDot => lookahead.is_none(),
                Token::Qm | Token::Char(_) => false,
            };
            if skip {
                set.insert(state + 1);
            }
        }
    }
}

/// A bit set over pattern positions.
struct StateSet<'s>(&'s mut [u64]);

impl StateSet<'_> {
    fn insert(&mut self, i: usize) {
        if let Some(w) = self.0.get_mut(i / 64) {
            *w |= 1 << (i % 64);
        }
    }

    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    fn clear(&mut self) {
        self.0.fill(0);
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|w| *w == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_cases_of_part_one() {
        assert!(is_name_in_expression("", "", false));
        assert!(!is_name_in_expression("", "a", false));
        assert!(!is_name_in_expression("*", "", false));
        assert!(is_name_in_expression("*", "anything.at.all", false));
        assert!(is_name_in_expression("*.*", "noextension", false));
        assert!(is_name_in_expression("*.txt", "file.txt", false));
        assert!(!is_name_in_expression("*.txt", "file.txt2", false));
        assert!(!is_name_in_expression("*.txt", "txt", false));
        assert!(is_name_in_expression("*.TXT", "file.txt", true));
    }

    #[test]
    fn rules_table() {
        // (expression, name, expected), case-sensitive.
        let cases = [
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("a*", "a", true),
            ("*b*", "abc", true),
            ("*b*", "acd", false),
            ("**", "x", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "aXcYb", false),
            // DOS_STAR stops at the last period; dots before it are consumed.
            ("<.txt", "file.txt", true),
            ("<.txt", "a.b.txt", true),
            ("<", "a.b", false),
            ("<", "ab", true),
            ("<.b", "a.b", true),
            ("<b", "a.b", false),
            ("<.txt", "file", false),
            // DOS_QM: one character, or nothing at a period or the end of the name.
            (">>>.txt", "ab.txt", true),
            (">>>.txt", "abcd.txt", false),
            ("a>>", "a", true),
            ("a>>", "ab", true),
            ("a>b", "ab", false),
            ("a>.b", "ax.b", true),
            // DOS_DOT: a period, or nothing at the end.
            ("a\"", "a", true),
            ("a\"", "a.", true),
            ("a\"b", "a.b", true),
            ("a\"b", "ab", false),
            ("a\"*", "a.b", true),
            // The way Windows rewrites `*.` and `?`: "<\"*" matches names with no extension.
            ("<\"*", "noext", true),
            ("<\"*", "has.ext", true),
            ("x>\">>>", "x", true),
            ("x>\">>>", "xy.abc", true),
            ("x>\">>>", "xy.abcd", false),
            ("abc", "abc", true),
            ("abc", "ABC", false),
        ];
        for (expr, name, expected) in cases {
            assert_eq!(
                is_name_in_expression(expr, name, false),
                expected,
                "{expr:?} vs {name:?}"
            );
        }
    }

    #[test]
    fn case_folding_is_unicode_not_ascii() {
        assert!(is_name_in_expression("ABC", "abc", true));
        assert!(is_name_in_expression("ÜNÏCÖDÉ.TXT", "ünïcödé.txt", true));
        assert!(is_name_in_expression("ΣΊΣΥΦΟΣ*", "σίσυφος.txt", true));
        assert!(is_name_in_expression("straẞe", "STRAßE", true));
        assert!(is_name_in_expression("*ÉTÉ", "un été", true));
        assert!(!is_name_in_expression("ÜNÏCÖDÉ.TXT", "ünïcödé.txt", false));
    }

    #[test]
    fn has_wildcards_knows_the_dos_ones() {
        assert!(!has_wildcards("plain.txt"));
        for w in ["*", "a?", "<", ">", "\""] {
            assert!(has_wildcards(w), "{w}");
        }
    }

    #[test]
    fn pathological_patterns_stay_fast() {
        let name = "a".repeat(255);
        let expr = "*a".repeat(200) + "b";
        let started = std::time::Instant::now();
        assert!(!is_name_in_expression(&expr, &name, true));
        assert!(!is_name_in_expression(
            "*a*a*a*a*a*a*a*a*a*a*a*a*b",
            &name,
            false
        ));
        let dos = "<>".repeat(2000) + "b";
        assert!(!is_name_in_expression(&dos, &name, true));
        assert!(is_name_in_expression(&"<>".repeat(2000), &name, true));
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn compiled_expression_matches_many_names() {
        let expr = Expression::new("*.rs", true);
        let names = ["lib.rs", "MAIN.RS", "notes.md", "rs"];
        let hits: Vec<_> = names.into_iter().filter(|n| expr.matches(n)).collect();
        assert_eq!(hits, ["lib.rs", "MAIN.RS"]);
    }
}
