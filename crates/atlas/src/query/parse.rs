//! The text form of a [`Predicate`], typed by shell users:
//!
//! ```text
//! expr    := or
//! or      := and ("or" and)*
//! and     := unary ("and" unary)*
//! unary   := "not" unary | "(" expr ")" | "exists" field | field test
//! test    := op value | "between" value ["and"] value | "overlaps" value value | "exists"
//! op      := "=" | "==" | "!=" | "<" | "<=" | ">" | ">="
//! field   := NAME | NAME.min | NAME.max | NAME.nulls | NAME.count | @KEY
//! value   := number | "text" | 'text' | true | false | YYYY-MM-DD[THH:MM[:SS[.f]]][Z]
//! ```
//!
//! A bare `NAME` is a dataset attribute if a schema declares that key, else an
//! array; `@KEY` is always the attribute. Keywords are case-insensitive.

use super::error::ParseError;
use super::predicate::{CmpOp, Field, Predicate, StatField};
use super::value::Value;
use crate::Timestamp;

/// Nesting deeper than this (parentheses, `not`) is refused rather than
/// risking the stack on hostile input.
const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Attr(String),
    Literal(Value),
    Op(CmpOp),
    Open,
    Close,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    at: usize,
}

/// Parses `expr` into a [`Predicate`]; the error's display points at the offending token.
pub fn parse(expr: &str) -> Result<Predicate, ParseError> {
    let tokens = lex(expr)?;
    let mut p = Parser {
        expr,
        tokens,
        pos: 0,
        depth: 0,
    };
    let out = p.or()?;
    match p.peek() {
        None => Ok(out),
        Some(t) => Err(p.error_at(t.at, "expected `and`, `or` or the end here")),
    }
}

fn error(expr: &str, at: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        expr: expr.to_owned(),
        offset: at,
        message: message.into(),
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn is_literal_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '-' | '+')
}

fn lex(expr: &str) -> Result<Vec<Token>, ParseError> {
    let mut out = Vec::new();
    let mut chars = expr.char_indices().peekable();
    // The end of the run of characters from `start` that satisfy `keep`.
    let run_end = |start: usize, keep: fn(char) -> bool| {
        expr.get(start..)
            .and_then(|rest| rest.char_indices().find(|&(_, c)| !keep(c)))
            .map_or(expr.len(), |(i, _)| start.saturating_add(i))
    };
    while let Some(&(at, c)) = chars.peek() {
        let (tok, end) = match c {
            c if c.is_whitespace() => {
                chars.next();
                continue;
            }
            '(' => (Tok::Open, at.saturating_add(1)),
            ')' => (Tok::Close, at.saturating_add(1)),
            '=' | '!' | '<' | '>' => {
                let next = expr
                    .get(at.saturating_add(1)..)
                    .and_then(|s| s.chars().next());
                let (op, len) = match (c, next) {
                    ('=', Some('=')) => (CmpOp::Eq, 2),
                    ('=', _) => (CmpOp::Eq, 1),
                    ('!', Some('=')) => (CmpOp::Ne, 2),
                    ('<', Some('=')) => (CmpOp::Le, 2),
                    ('<', _) => (CmpOp::Lt, 1),
                    ('>', Some('=')) => (CmpOp::Ge, 2),
                    ('>', _) => (CmpOp::Gt, 1),
                    _ => return Err(error(expr, at, "`!` must be followed by `=`")),
                };
                (Tok::Op(op), at.saturating_add(len))
            }
            '"' | '\'' => {
                let (text, end) = string(expr, at, c)?;
                (Tok::Literal(Value::String(text)), end)
            }
            '@' => {
                let start = at.saturating_add(1);
                let end = run_end(start, is_word_char);
                let key = expr.get(start..end).unwrap_or_default();
                if key.is_empty() {
                    return Err(error(expr, at, "expected an attribute key after `@`"));
                }
                (Tok::Attr(key.to_owned()), end)
            }
            c if c.is_ascii_digit() || c == '-' || c == '+' => {
                let end = run_end(at.saturating_add(1), is_literal_char);
                let text = expr.get(at..end).unwrap_or_default();
                (Tok::Literal(literal(expr, at, text)?), end)
            }
            c if c.is_ascii_alphabetic() || c == '_' => {
                let end = run_end(at, is_word_char);
                (
                    Tok::Word(expr.get(at..end).unwrap_or_default().to_owned()),
                    end,
                )
            }
            other => {
                return Err(error(expr, at, format!("unexpected character {other:?}")));
            }
        };
        out.push(Token { tok, at });
        while chars.peek().is_some_and(|&(i, _)| i < end) {
            chars.next();
        }
    }
    Ok(out)
}

/// A quoted string from `at` (the quote); backslash escapes the next character.
fn string(expr: &str, at: usize, quote: char) -> Result<(String, usize), ParseError> {
    let body_start = at.saturating_add(quote.len_utf8());
    let mut text = String::new();
    let mut escaped = false;
    for (i, c) in expr.get(body_start..).unwrap_or_default().char_indices() {
        if escaped {
            text.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == quote {
            return Ok((
                text,
                body_start.saturating_add(i).saturating_add(c.len_utf8()),
            ));
        } else {
            text.push(c);
        }
    }
    Err(error(expr, at, "unterminated string"))
}

/// A number or an instant.
fn literal(expr: &str, at: usize, text: &str) -> Result<Value, ParseError> {
    if let Ok(t) = text.parse::<Timestamp>() {
        return Ok(Value::Timestamp(t));
    }
    if let Ok(i) = text.parse::<i64>() {
        return Ok(Value::Int(i));
    }
    match text.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(Value::Float(x)),
        _ => Err(error(
            expr,
            at,
            format!("{text:?} is neither a number nor a date (YYYY-MM-DD[THH:MM[:SS]])"),
        )),
    }
}

struct Parser<'a> {
    expr: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        if t.is_some() {
            self.pos = self.pos.saturating_add(1);
        }
        t
    }

    fn error_at(&self, at: usize, message: impl Into<String>) -> ParseError {
        error(self.expr, at, message)
    }

    fn end_error(&self, message: &str) -> ParseError {
        self.error_at(self.expr.len(), format!("{message}, found the end"))
    }

    fn keyword_is(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token { tok: Tok::Word(w), .. }) if w.eq_ignore_ascii_case(word))
    }

    fn or(&mut self) -> Result<Predicate, ParseError> {
        let mut parts = vec![self.and()?];
        while self.keyword_is("or") {
            self.next();
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Predicate::Or(parts)
        })
    }

    fn and(&mut self) -> Result<Predicate, ParseError> {
        let mut parts = vec![self.unary()?];
        while self.keyword_is("and") {
            self.next();
            parts.push(self.unary()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Predicate::And(parts)
        })
    }

    fn unary(&mut self) -> Result<Predicate, ParseError> {
        let Some(token) = self.next() else {
            return Err(self.end_error("expected a condition"));
        };
        if self.depth >= MAX_DEPTH {
            return Err(self.error_at(token.at, "nested too deeply"));
        }
        match token.tok {
            Tok::Open => {
                self.depth = self.depth.saturating_add(1);
                let inner = self.or()?;
                self.depth = self.depth.saturating_sub(1);
                match self.next() {
                    Some(Token {
                        tok: Tok::Close, ..
                    }) => Ok(inner),
                    Some(t) => Err(self.error_at(t.at, "expected `)`")),
                    None => Err(self.end_error("expected `)`")),
                }
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("not") => {
                self.depth = self.depth.saturating_add(1);
                let inner = self.unary()?;
                self.depth = self.depth.saturating_sub(1);
                Ok(inner.negated())
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("exists") => {
                let field = match self.next() {
                    Some(t) => self.field(t)?,
                    None => return Err(self.end_error("expected a name after `exists`")),
                };
                Ok(Predicate::Exists(field))
            }
            _ => {
                let field = self.field(token)?;
                self.test(field)
            }
        }
    }

    fn field(&self, token: Token) -> Result<Field, ParseError> {
        match token.tok {
            Tok::Attr(key) => Ok(Field::Attribute(key)),
            Tok::Word(w) if is_keyword(&w) => Err(self.error_at(
                token.at,
                format!("expected a name, found the keyword `{w}`"),
            )),
            Tok::Word(w) => Ok(match w.rsplit_once('.') {
                Some((array, suffix)) if !array.is_empty() => {
                    match StatField::from_suffix(suffix) {
                        Some(stat) => Field::Stat(array.to_owned(), stat),
                        None => Field::Name(w),
                    }
                }
                _ => Field::Name(w),
            }),
            _ => Err(self.error_at(token.at, "expected a name (an attribute or an array)")),
        }
    }

    fn test(&mut self, field: Field) -> Result<Predicate, ParseError> {
        const EXPECTED: &str =
            "expected =, !=, <, <=, >, >=, between, overlaps or exists after the name";
        let Some(token) = self.next() else {
            return Err(self.end_error(EXPECTED));
        };
        match token.tok {
            Tok::Op(op) => Ok(Predicate::Compare {
                field,
                op,
                value: self.value()?,
            }),
            Tok::Word(w) if w.eq_ignore_ascii_case("between") => {
                let lo = self.value()?;
                let and_then_value = self.keyword_is("and")
                    && matches!(
                        self.tokens.get(self.pos.saturating_add(1)),
                        Some(Token {
                            tok: Tok::Literal(_),
                            ..
                        })
                    );
                if and_then_value {
                    self.next();
                }
                let hi = self.value()?;
                Ok(Predicate::Between { field, lo, hi })
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("overlaps") => {
                let lo = self.value()?;
                let hi = self.value()?;
                Ok(Predicate::Overlaps { field, lo, hi })
            }
            Tok::Word(w) if w.eq_ignore_ascii_case("exists") => Ok(Predicate::Exists(field)),
            _ => Err(self.error_at(token.at, EXPECTED)),
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        const EXPECTED: &str = "expected a value (a number, a \"string\", a date, true or false)";
        let Some(token) = self.next() else {
            return Err(self.end_error(EXPECTED));
        };
        match token.tok {
            Tok::Literal(v) => Ok(v),
            Tok::Word(w) if w.eq_ignore_ascii_case("true") => Ok(Value::Bool(true)),
            Tok::Word(w) if w.eq_ignore_ascii_case("false") => Ok(Value::Bool(false)),
            _ => Err(self.error_at(token.at, EXPECTED)),
        }
    }
}

fn is_keyword(w: &str) -> bool {
    [
        "and", "or", "not", "between", "overlaps", "exists", "true", "false",
    ]
    .iter()
    .any(|k| w.eq_ignore_ascii_case(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argo_example_parses_into_a_conjunction() {
        let p = parse(
            r#"LATITUDE between -10 10 and JULD >= 2020-01-01 and platform_number = "6901234""#,
        )
        .unwrap();
        assert_eq!(
            p,
            Predicate::And(vec![
                Field::name("LATITUDE").between(-10, 10),
                Field::name("JULD").at_least(Value::Timestamp(atlas_format::Timestamp(
                    1_577_836_800_000_000_000
                ))),
                Field::name("platform_number").equals("6901234"),
            ])
        );
    }

    #[test]
    fn between_may_join_its_bounds_with_and() {
        assert_eq!(
            parse("x between 1 and 2.5 and y exists").unwrap(),
            Predicate::And(vec![
                Field::name("x").between(1, 2.5),
                Field::name("y").exists()
            ])
        );
    }

    #[test]
    fn or_binds_looser_than_and_and_not_tighter() {
        assert_eq!(
            parse("not a = 1 or b.nulls = 0 and exists @c").unwrap(),
            Predicate::Or(vec![
                Field::name("a").equals(1).negated(),
                Predicate::And(vec![
                    Field::stat("b", StatField::Nulls).equals(0),
                    Field::attr("c").exists()
                ])
            ])
        );
    }

    #[test]
    fn an_error_points_at_the_offending_token() {
        let e = parse("LATITUDE between -10 ten").unwrap_err();
        assert_eq!(e.offset, 21);
        assert_eq!(
            e.to_string(),
            "expected a value (a number, a \"string\", a date, true or false)\n  LATITUDE between -10 ten\n                       ^"
        );
        assert_eq!(parse("JULD >= 2020-13-01").unwrap_err().offset, 8);
        assert_eq!(parse("(a = 1").unwrap_err().offset, 6);
        assert_eq!(parse("a = 'open").unwrap_err().offset, 4);
        assert_eq!(parse("a = 1 b").unwrap_err().offset, 6);
    }

    #[test]
    fn the_caret_counts_characters_not_bytes() {
        let e = parse("a = 'é' )").unwrap_err();
        assert_eq!((e.offset, e.column()), (9, 8));
        assert_eq!(parse("é = 1").unwrap_err().offset, 0);
    }

    #[test]
    fn hostile_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}a = 1", "not ".repeat(10_000));
        assert!(parse(&deep).unwrap_err().message.contains("nested"));
        let parens = format!("{}a = 1", "(".repeat(10_000));
        assert!(parse(&parens).unwrap_err().message.contains("nested"));
    }
}
