//! Reading a [`ToolOutcome`] without copying its data first.
//!
//! A result is `{"ok": true, "data": …}` or `{"ok": false, "error": …}`, and its data is most
//! of a long session's journal (whole files read, command output). serde's derived reader for the
//! untagged enum copies the object into a tree of its own, then tries each variant on the copy,
//! which copies the data once more. This one reads `data` straight into its JSON value and decides
//! the variant after, with the derived reader's rules: the first variant whose fields are all
//! there, once each and of their types (`ok` the right literal), wins; anything else is refused
//! with the derived reader's message (a sequence is neither, for it too). The tests hold the
//! two to the same answers.

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::{False, ToolErrorBody, ToolOutcome, True};

/// What the derived reader says of a result that is neither variant.
const NEITHER: &str = "data did not match any variant of untagged enum ToolOutcome";

impl<'de> Deserialize<'de> for ToolOutcome {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(OutcomeVisitor)
    }
}

/// A field of a result as read, and how many times it came (a repeated field spoils the variant
/// that has it, as it does for the derived reader).
struct Seen<T> {
    value: Option<T>,
    times: usize,
}

impl<T> Default for Seen<T> {
    fn default() -> Self {
        Self {
            value: None,
            times: 0,
        }
    }
}

impl<T> Seen<T> {
    fn put(&mut self, value: T) {
        self.times += 1;
        if self.value.is_none() {
            self.value = Some(value);
        }
    }

    /// The value when it came exactly once.
    fn once(self) -> Option<T> {
        if self.times == 1 { self.value } else { None }
    }
}

/// Picks the variant from the fields read: `ok: true` with `data`, else `ok: false` with an
/// `error` that reads as one.
fn decide<E: de::Error>(
    ok: Option<Value>,
    data: Option<Value>,
    error: Option<Value>,
) -> Result<ToolOutcome, E> {
    match (ok, data, error) {
        (Some(Value::Bool(true)), Some(data), _) => Ok(ToolOutcome::Ok { ok: True, data }),
        (Some(Value::Bool(false)), _, Some(error)) => ToolErrorBody::deserialize(error)
            .map(|error| ToolOutcome::Err { ok: False, error })
            .map_err(|_| E::custom(NEITHER)),
        _ => Err(E::custom(NEITHER)),
    }
}

struct OutcomeVisitor;

impl OutcomeVisitor {
    fn neither<E: de::Error>() -> Result<ToolOutcome, E> {
        Err(E::custom(NEITHER))
    }
}

impl<'de> Visitor<'de> for OutcomeVisitor {
    type Value = ToolOutcome;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a tool result")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<ToolOutcome, M::Error> {
        let (mut ok, mut data, mut error) = (Seen::default(), Seen::default(), Seen::default());
        while let Some(key) = map.next_key::<Field>()? {
            match key {
                Field::Ok => ok.put(map.next_value::<Value>()?),
                Field::Data => data.put(map.next_value::<Value>()?),
                Field::Error => error.put(map.next_value::<Value>()?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // A repeated `ok` spoils both variants; `data` only the first, `error` only the second.
        let ok = ok.once();
        match ok {
            Some(Value::Bool(true)) => decide(ok, data.once(), None),
            _ => decide(ok, None, error.once()),
        }
    }

    /// A sequence is neither variant for the derived reader (it reads untagged variants from maps
    /// only); it is read whole first, as that reader reads it.
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<ToolOutcome, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Self::neither()
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_unit<E: de::Error>(self) -> Result<ToolOutcome, E> {
        Self::neither()
    }

    fn visit_none<E: de::Error>(self) -> Result<ToolOutcome, E> {
        Self::neither()
    }
}

/// The keys a result's variants know; any other is ignored, as by the derived reader.
enum Field {
    Ok,
    Data,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_identifier(FieldVisitor)
    }
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field of a tool result")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Field, E> {
        Ok(match key {
            "ok" => Field::Ok,
            "data" => Field::Data,
            "error" => Field::Error,
            _ => Field::Other,
        })
    }
}
