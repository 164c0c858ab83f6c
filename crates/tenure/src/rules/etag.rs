//! ETag arguments (docs/spec.md §1): any non-empty string without an inner `"`, compared with
//! tenure's own form.

use crate::error::{Error, Result};
use crate::types::ETag;

/// An ETag given as an argument. Any non-empty string without an inner `"` is accepted; one
/// pair of surrounding quotes is stripped and the rest compared byte for byte with tenure's
/// own form, so a foreign or stale ETag simply never matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ETagArg {
    /// `*`: matches any existing item.
    Any,
    /// One of tenure's ETags.
    Exact(ETag),
    /// Well-formed text that no tenure item can carry.
    Foreign,
}

impl ETagArg {
    /// Parses an ETag argument; `argument` names it in the error.
    pub fn parse(argument: &'static str, text: &str) -> Result<ETagArg> {
        let inner = match text
            .strip_prefix('"')
            .and_then(|rest| rest.strip_suffix('"'))
        {
            Some(stripped) => stripped,
            None => text,
        };
        if inner.is_empty() {
            return Err(Error::invalid(argument, "an ETag must not be empty"));
        }
        if inner.contains('"') {
            return Err(Error::invalid(
                argument,
                "an ETag must not contain an inner '\"'",
            ));
        }
        if inner == "*" {
            return Ok(ETagArg::Any);
        }
        Ok(parse_own_form(inner).map_or(ETagArg::Foreign, ETagArg::Exact))
    }

    pub fn matches(self, etag: ETag) -> bool {
        match self {
            ETagArg::Any => true,
            ETagArg::Exact(expected) => expected == etag,
            ETagArg::Foreign => false,
        }
    }
}

impl From<ETag> for ETagArg {
    fn from(etag: ETag) -> ETagArg {
        ETagArg::Exact(etag)
    }
}

/// `0x` followed by exactly 16 upper-case hexadecimal digits, as `ETag`'s Display writes it.
fn parse_own_form(inner: &str) -> Option<ETag> {
    let digits = inner.strip_prefix("0x")?;
    if digits.len() != 16
        || !digits
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'A'..=b'F'))
    {
        return None;
    }
    u64::from_str_radix(digits, 16).ok().map(ETag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ETag;

    #[test]
    fn display_and_parse_round_trip() {
        let etag = ETag(0x4D2);
        assert_eq!(etag.to_string(), "\"0x00000000000004D2\"");
        assert_eq!(
            ETagArg::parse("if_match", &etag.to_string()).unwrap(),
            ETagArg::Exact(etag)
        );
        assert_eq!(
            ETagArg::parse("if_match", "0x00000000000004D2").unwrap(),
            ETagArg::Exact(etag)
        );
    }

    #[test]
    fn foreign_and_lower_case_never_match() {
        assert_eq!(
            ETagArg::parse("if_match", "\"0x00000000000004d2\"").unwrap(),
            ETagArg::Foreign
        );
        assert_eq!(ETagArg::parse("if_match", "abc").unwrap(), ETagArg::Foreign);
        assert!(!ETagArg::Foreign.matches(ETag(1)));
    }

    #[test]
    fn star_empty_and_inner_quote() {
        assert_eq!(ETagArg::parse("if_match", "*").unwrap(), ETagArg::Any);
        assert_eq!(ETagArg::parse("if_match", "\"*\"").unwrap(), ETagArg::Any);
        for bad in ["", "\"\"", "a\"b", "\"a\"b\""] {
            let error = ETagArg::parse("if_match", bad).unwrap_err();
            assert_eq!(error.code(), crate::ErrorCode::InvalidArgument, "{bad:?}");
            assert!(error.to_string().contains("if_match"));
        }
    }
}
