//! Attribute values read off a validated footer archive, without
//! array-format's open: one attribute over every array (what the calls
//! across datasets ask for), or the attributes of one array.
//!
//! Keys are pooled strings and values pooled entries, so an attribute pair
//! is two indices. Only the values asked for are decoded, each distinct one
//! once, and the memory of an answer is counted before any of it is
//! allocated: a small footer can name one large value from every array.
//! Where an array repeats a key, its last pair is the value (as array-format
//! reads it).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use foldhash::fast::FixedState;

use crate::footer::archive::FooterArchive;
use crate::footer::schema::{ArchivedArrayMeta, ArchivedFooter, DiskValue};
use crate::footer::validate::{FooterProblem, attribute_budget};
use crate::types::attr::Attr;

/// Attribute `key` of every array of the footer `archive`, in footer order
/// (`None` for an array without it); `None` when no array stores it.
///
/// Only the values asked for are decoded, each distinct one once, and the
/// memory of the answer is counted before any of it is allocated: values
/// are pooled, so a small footer can name one large value from every array.
pub(crate) fn attribute_cells(
    archive: &FooterArchive,
    key: &str,
) -> Result<Option<Vec<Option<Attr>>>, FooterProblem> {
    let (footer, footer_len) = (archive.footer(), archive.len());
    let Some(key_at) = footer.strings.iter().position(|s| s.as_str() == key) else {
        return Ok(None);
    };
    let budget = attribute_budget(footer_len);
    let over = || FooterProblem::AttributeValues {
        key: key.to_owned(),
        budget,
    };
    // Which pool value each array names (keys are pooled strings, so the
    // key is one index; a later pair wins), and what the answer will cost.
    let mut picks = Vec::with_capacity(footer.arrays.len());
    // Each distinct value decoded once, with the number of arrays naming it.
    let mut decoded: HashMap<u32, (Attr, usize), FixedState> =
        HashMap::with_hasher(FixedState::default());
    let mut cost: u64 = 0;
    for array in footer.arrays.iter() {
        let pick = array
            .attributes
            .iter()
            .rev()
            .find(|pair| usize::try_from(pair.0.to_native()).ok() == Some(key_at))
            .map(|pair| pair.1.to_native());
        if let Some(index) = pick {
            let (value, uses) = match decoded.entry(index) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    e.insert((pooled_value(footer, array, index, budget, &over)?, 0))
                }
            };
            *uses = uses.saturating_add(1);
            cost = cost
                .saturating_add(std::mem::size_of::<Option<Attr>>() as u64)
                .saturating_add(value.heap_bytes() as u64);
            if cost > budget {
                return Err(over());
            }
        }
        picks.push(pick);
    }
    if picks.iter().all(Option::is_none) {
        return Ok(None);
    }
    Ok(Some(
        picks
            .into_iter()
            .map(|pick| pick.and_then(|index| take_or_clone(&mut decoded, index)))
            .collect(),
    ))
}

/// Value `index` for one array naming it: the decoded value itself for the
/// last of them, a copy for the others.
fn take_or_clone(
    decoded: &mut HashMap<u32, (Attr, usize), FixedState>,
    index: u32,
) -> Option<Attr> {
    let Entry::Occupied(mut entry) = decoded.entry(index) else {
        return None;
    };
    let (value, uses) = entry.get_mut();
    *uses = uses.saturating_sub(1);
    if *uses == 0 {
        Some(entry.remove().0)
    } else {
        Some(value.clone())
    }
}

/// Entry `index` of the footer's value pool, named by an attribute of
/// `array`; its strings count against `budget` before they are copied.
fn pooled_value(
    footer: &ArchivedFooter,
    array: &ArchivedArrayMeta,
    index: u32,
    budget: u64,
    over: &impl Fn() -> FooterProblem,
) -> Result<Attr, FooterProblem> {
    let outside = |pool, index, len| FooterProblem::AttributePool {
        array: array.name.as_str().to_owned(),
        pool,
        index,
        len,
    };
    let archived = usize::try_from(index)
        .ok()
        .and_then(|i| footer.values.get(i))
        .ok_or_else(|| outside("value", index, footer.values.len()))?;
    let value = rkyv::deserialize::<DiskValue, rkyv::rancor::Error>(archived).map_err(|e| {
        FooterProblem::DoesNotValidate {
            message: e.to_string(),
        }
    })?;
    let strings = &footer.strings;
    let mut failure = None;
    let mut spent: u64 = 0;
    let attr = Attr::from_disk(value, |i| {
        let Some(s) = usize::try_from(i).ok().and_then(|at| strings.get(at)) else {
            failure = Some(outside("string", i, strings.len()));
            return None;
        };
        spent = spent.saturating_add(s.len() as u64);
        if spent > budget {
            failure = Some(over());
            return None;
        }
        Some(s.as_str().to_owned())
    });
    attr.ok_or_else(|| failure.unwrap_or_else(|| outside("string", index, strings.len())))
}

/// Attribute `key` of the array at footer position `position`, if it stores it.
pub(crate) fn attribute_of(
    archive: &FooterArchive,
    position: usize,
    key: &str,
) -> Result<Option<Attr>, FooterProblem> {
    let footer = archive.footer();
    let Some(array) = footer.arrays.get(position) else {
        return Ok(None);
    };
    let budget = attribute_budget(archive.len());
    let over = || FooterProblem::AttributeValues {
        key: key.to_owned(),
        budget,
    };
    let mut found = None;
    for pair in array.attributes.iter() {
        if pooled_key(footer, array, pair.0.to_native())? == key {
            found = Some(pair.1.to_native());
        }
    }
    found
        .map(|index| pooled_value(footer, array, index, budget, &over))
        .transpose()
}

/// Every attribute of the array at footer position `position`, in the order
/// it stores them (a repeated key once, where it first occurs, with its last value).
pub(crate) fn attributes_of(
    archive: &FooterArchive,
    position: usize,
) -> Result<Vec<(String, Attr)>, FooterProblem> {
    let footer = archive.footer();
    let Some(array) = footer.arrays.get(position) else {
        return Ok(Vec::new());
    };
    let budget = attribute_budget(archive.len());
    let mut out: Vec<(String, Attr)> = Vec::with_capacity(array.attributes.len());
    let mut spent: u64 = 0;
    for pair in array.attributes.iter() {
        let key = pooled_key(footer, array, pair.0.to_native())?;
        let over = || FooterProblem::AttributeValues {
            key: key.to_owned(),
            budget,
        };
        let value = pooled_value(footer, array, pair.1.to_native(), budget, &over)?;
        spent = spent
            .saturating_add(key.len() as u64)
            .saturating_add(value.heap_bytes() as u64);
        if spent > budget {
            return Err(over());
        }
        match out.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => out.push((key.to_owned(), value)),
        }
    }
    Ok(out)
}

/// Key string `index` of an attribute pair of `array`.
fn pooled_key<'f>(
    footer: &'f ArchivedFooter,
    array: &ArchivedArrayMeta,
    index: u32,
) -> Result<&'f str, FooterProblem> {
    usize::try_from(index)
        .ok()
        .and_then(|i| footer.strings.get(i))
        .map(|s| s.as_str())
        .ok_or_else(|| FooterProblem::AttributePool {
            array: array.name.as_str().to_owned(),
            pool: "key",
            index,
            len: footer.strings.len(),
        })
}
