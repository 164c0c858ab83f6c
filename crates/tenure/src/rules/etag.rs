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

/// The ETags of an `if_match` or `if_none_match` condition: a slice to read, kept inline while
/// it holds one, so a conditional write's usual single ETag allocates nothing (an allocation
/// and its free are a measurable part of a compare-and-set).
#[derive(Clone, Default)]
pub struct ETagList(Entries);

/// A plain tag byte (not a niche in the `Vec`), so asking which variant it is is one compare.
#[derive(Clone, Default)]
#[repr(u8)]
enum Entries {
    #[default]
    Empty,
    One(ETagArg),
    Many(Vec<ETagArg>),
}

impl ETagList {
    pub const fn new() -> ETagList {
        ETagList(Entries::Empty)
    }

    /// Whether the condition was not given. (The slice's `is_empty` would build the slice
    /// first: every read and write asks this of both lists.)
    #[inline]
    pub fn is_empty(&self) -> bool {
        matches!(self.0, Entries::Empty)
    }

    #[inline]
    pub fn contains(&self, etag: &ETagArg) -> bool {
        !self.is_empty() && self.as_slice().contains(etag)
    }

    #[inline]
    pub fn as_slice(&self) -> &[ETagArg] {
        match &self.0 {
            Entries::Empty => &[],
            Entries::One(etag) => std::slice::from_ref(etag),
            Entries::Many(all) => all,
        }
    }

    pub fn push(&mut self, etag: impl Into<ETagArg>) {
        let etag = etag.into();
        self.0 = match std::mem::take(&mut self.0) {
            Entries::Empty => Entries::One(etag),
            Entries::One(first) => Entries::Many(vec![first, etag]),
            Entries::Many(mut all) => {
                all.push(etag);
                Entries::Many(all)
            }
        };
    }
}

impl std::ops::Deref for ETagList {
    type Target = [ETagArg];

    #[inline]
    fn deref(&self) -> &[ETagArg] {
        self.as_slice()
    }
}

impl PartialEq for ETagList {
    fn eq(&self, other: &ETagList) -> bool {
        **self == **other
    }
}

impl Eq for ETagList {}

impl std::fmt::Debug for ETagList {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Into<ETagArg>> Extend<T> for ETagList {
    fn extend<I: IntoIterator<Item = T>>(&mut self, etags: I) {
        etags.into_iter().for_each(|etag| self.push(etag));
    }
}

impl<T: Into<ETagArg>> FromIterator<T> for ETagList {
    fn from_iter<I: IntoIterator<Item = T>>(etags: I) -> ETagList {
        let mut list = ETagList::new();
        list.extend(etags);
        list
    }
}

impl From<Vec<ETagArg>> for ETagList {
    fn from(etags: Vec<ETagArg>) -> ETagList {
        match etags.len() {
            0 | 1 => etags.into_iter().collect(),
            _ => ETagList(Entries::Many(etags)),
        }
    }
}

impl From<&[ETagArg]> for ETagList {
    fn from(etags: &[ETagArg]) -> ETagList {
        etags.iter().copied().collect()
    }
}

impl<T: Into<ETagArg>> From<T> for ETagList {
    fn from(etag: T) -> ETagList {
        ETagList(Entries::One(etag.into()))
    }
}

impl IntoIterator for ETagList {
    type Item = ETagArg;
    type IntoIter = std::vec::IntoIter<ETagArg>;

    fn into_iter(self) -> Self::IntoIter {
        match self.0 {
            Entries::Empty => Vec::new().into_iter(),
            Entries::One(etag) => vec![etag].into_iter(),
            Entries::Many(all) => all.into_iter(),
        }
    }
}

impl<'a> IntoIterator for &'a ETagList {
    type Item = &'a ETagArg;
    type IntoIter = std::slice::Iter<'a, ETagArg>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
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
    fn an_etag_list_reads_the_same_however_it_was_built() {
        let (first, second) = (ETagArg::Exact(ETag(1)), ETagArg::Any);
        let mut pushed = ETagList::new();
        assert!(pushed.is_empty());
        pushed.push(first);
        assert_eq!(&*pushed, &[first]);
        pushed.push(second);
        pushed.push(ETag(3));
        let all = vec![first, second, ETagArg::Exact(ETag(3))];
        assert_eq!(&*pushed, all.as_slice());
        assert_eq!(pushed, ETagList::from(all.clone()));
        assert_eq!(pushed, all.iter().copied().collect::<ETagList>());
        assert_eq!(pushed.clone().into_iter().collect::<Vec<_>>(), all);
        assert_eq!(ETagList::from(vec![first]), ETagList::from(first));
        assert_ne!(ETagList::from(first), ETagList::from(vec![first, first]));
        assert_eq!(ETagList::from(Vec::new()), ETagList::default());
        let mut extended = ETagList::from(first);
        extended.extend(ETagList::from(vec![second, ETagArg::Exact(ETag(3))]));
        assert_eq!(extended, pushed);
        assert_eq!(format!("{pushed:?}"), format!("{all:?}"));
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
