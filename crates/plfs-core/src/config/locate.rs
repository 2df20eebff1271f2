//! Finds the line of a node in YAML text.
//!
//!
//! serde_yaml's `Value` carries no positions, but errors raised while deserializing a node get
//! that node's position. So we deserialize the text again with a visitor that walks `steps` and
//! fails on purpose at the target node, and read the line from the error.

use super::Step;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess};
use serde::de::{VariantAccess, Visitor};
use std::fmt;

const MARK: &str = "plfs-config-locate-marker";

/// The 1-based line of the node at `steps`, or None if it cannot be found.
pub(super) fn line(text: &str, steps: &[Step]) -> Option<usize> {
    let de = serde_yaml::Deserializer::from_str(text);
    match Seek(steps).deserialize(de) {
        Err(e) if e.to_string().contains(MARK) => e.location().map(|l| l.line()),
        _ => None,
    }
}

fn hit<E: de::Error>() -> E {
    E::custom(MARK)
}

struct Seek<'s>(&'s [Step]);

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Seek<'_> {
    fn scalar<E: de::Error>(&self) -> Result<(), E> {
        if self.0.is_empty() {
            Err(hit())
        } else {
            Ok(())
        }
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML node")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.scalar()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.scalar()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(hit()),
            Some((Step::Index(want), rest)) => {
                let mut i = 0usize;
                loop {
                    let more = if i == *want {
                        seq.next_element_seed(Seek(rest))?.is_some()
                    } else {
                        seq.next_element::<IgnoredAny>()?.is_some()
                    };
                    if !more {
                        return Ok(());
                    }
                    i = i.saturating_add(1);
                }
            }
            Some(_) => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(())
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(hit()),
            Some((Step::Value(want), rest)) => {
                let mut found = false;
                while let Some(k) = map.next_key::<serde_yaml::Value>()? {
                    if !found && k.as_str() == Some(want.as_str()) {
                        found = true;
                        map.next_value_seed(Seek(rest))?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(())
            }
            Some((Step::Key(want), _)) => {
                while map.next_key_seed(KeyProbe(want))?.is_some() {
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(())
            }
            Some((Step::Index(_), _)) => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(())
            }
        }
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        if self.0.is_empty() {
            return Err(hit());
        }
        let (_, variant) = data.variant::<IgnoredAny>()?;
        variant.newtype_variant::<IgnoredAny>()?;
        Ok(())
    }
}

/// Deserializes a mapping key, failing on purpose if it is the string wanted.
struct KeyProbe<'s>(&'s str);

impl<'de> DeserializeSeed<'de> for KeyProbe<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeyProbe<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<(), E> {
        if s == self.0 {
            Err(hit())
        } else {
            Ok(())
        }
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(())
    }
}
