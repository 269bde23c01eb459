//! Reading an [`Event`] without copying it first: a long session's journal is tens of thousands
//! of them, and resuming it reads every one (issue 46 item 5).
//!
//! Events are written tagged by a `type` key (`{"type":"user_message","text":…}`). serde's
//! derived reader for such an enum cannot know the variant before it has seen the tag, which may
//! come anywhere in the object, so it copies the whole object into a tree of its own first and
//! builds the variant from the copy: every key and value of every event is read twice. pablo's
//! writer (serde's) puts the tag first, so the reader here reads the tag and hands the rest of the
//! object straight to the variant's own derived reader: that of `EventByTag`, the same variants
//! declared once with `Event` by `tagged_event!` and tagged outside instead. A tag that is not
//! first (an object written by something else) still loads: the object is written again with its
//! tag first (its values as they were, byte for byte) and read so: the variants' readers are
//! built for reading JSON bytes (once more for the sequence form, which nothing writes).
//!
//! What is accepted, and what each input becomes, is what the derived reader gave: the tests
//! compare the two over every variant and over changed copies of them (keys moved, dropped,
//! repeated, retyped). Only the position an error names may differ (this reader stops where the
//! fault is; the derived one after the whole object).

use serde::de::value::{
    BorrowedStrDeserializer, SeqDeserializer, StrDeserializer, StringDeserializer,
};
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, IgnoredAny, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Event, EventByTag};

/// The key that names an event's variant.
const TAG: &str = "type";

/// Declares `Event` as written and, from the same text, `EventByTag`: its variants with the tag
/// outside (`{"user_message": {"text": …}}`, serde's default), whose derived reader the fast one
/// hands each event's fields to. Tests get `EventAsDerived` too: serde's own reader for the tag
/// inside, the reference the fast one is held to.
macro_rules! tagged_event {
    (
        $(#[$meta:meta])*
        pub enum Event {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({
                    $(
                        $(#[$fmeta:meta])*
                        $field:ident : $ty:ty
                    ),* $(,)?
                })?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum Event {
            $( $(#[$vmeta])* $variant $({ $( $(#[$fmeta])* $field : $ty ),* })? ),*
        }

        /// [`Event`]'s variants tagged outside, read by `tagged`'s reader (never written).
        #[derive(Deserialize)]
        // The same names in messages as `Event` (`struct variant Event::UserMessage`).
        #[serde(rename = "Event", rename_all = "snake_case")]
        enum EventByTag {
            $( $variant $({ $( $(#[$fmeta])* $field : $ty ),* })? ),*
        }

        impl From<EventByTag> for Event {
            fn from(e: EventByTag) -> Self {
                match e {
                    $(
                        EventByTag::$variant $({ $($field),* })?
                            => Event::$variant $({ $($field),* })?
                    ),*
                }
            }
        }

        /// serde's derived reader for [`Event`] as it is written (the tag inside): what the fast
        /// reader must agree with.
        #[cfg(test)]
        #[derive(Debug, Deserialize)]
        #[serde(rename = "Event", tag = "type", rename_all = "snake_case")]
        pub enum EventAsDerived {
            $( $variant $({ $( $(#[$fmeta])* $field : $ty ),* })? ),*
        }

        #[cfg(test)]
        impl From<EventAsDerived> for Event {
            fn from(e: EventAsDerived) -> Self {
                match e {
                    $(
                        EventAsDerived::$variant $({ $($field),* })?
                            => Event::$variant $({ $($field),* })?
                    ),*
                }
            }
        }

        /// How many variants [`Event`] has (the tests check that they cover each).
        #[cfg(test)]
        pub const EVENT_VARIANTS: usize = [$(stringify!($variant)),*].len();
    };
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `any`, as the derived reader: an event may also be a sequence, the tag first.
        deserializer.deserialize_any(EventVisitor)
    }
}

struct EventVisitor;

impl<'de> Visitor<'de> for EventVisitor {
    type Value = Event;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("internally tagged enum Event")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Event, M::Error> {
        match map.next_key_seed(FirstKey)? {
            None => Err(de::Error::missing_field(TAG)),
            Some(Key::Tag) => EventByTag::deserialize(TagNext { map }).map(Event::from),
            Some(Key::Other(first)) => {
                // Not as pablo writes it: the object is written again, as it was but with its
                // tag first, and read that way.
                let mut entries = vec![(first, map.next_value::<Box<RawValue>>()?)];
                while let Some(key) = map.next_key::<String>()? {
                    entries.push((key, map.next_value()?));
                }
                let Some(at) = entries.iter().position(|(key, _)| key == TAG) else {
                    return Err(de::Error::missing_field(TAG));
                };
                let tag = entries.remove(at);
                let mut text = Vec::new();
                text.push(b'{');
                for (i, (key, value)) in std::iter::once(tag).chain(entries).enumerate() {
                    if i > 0 {
                        text.push(b',');
                    }
                    serde_json::to_writer(&mut text, &key).map_err(de::Error::custom)?;
                    text.push(b':');
                    text.extend_from_slice(value.get().as_bytes());
                }
                text.push(b'}');
                serde_json::from_slice(&text).map_err(de::Error::custom)
            }
        }
    }

    /// `["user_message", "hi"]`: the tag, then the fields in their order. Nothing writes this;
    /// the derived reader took it, so this one does, the simple way (kept aside whole).
    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Event, S::Error> {
        let Some(tag) = seq.next_element::<Value>()? else {
            return Err(de::Error::missing_field(TAG));
        };
        let mut rest = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            rest.push(v);
        }
        EventByTag::deserialize(KeptSeq { tag, rest })
            .map(Event::from)
            .map_err(de::Error::custom)
    }
}

/// The first key of an event.
enum Key {
    Tag,
    Other(String),
}

/// Reads the first key: the tag, in what pablo writes.
struct FirstKey;

impl<'de> DeserializeSeed<'de> for FirstKey {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FirstKey {
    type Value = Key;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a type tag `{TAG}` or any other value")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        Ok(if key == TAG {
            Key::Tag
        } else {
            Key::Other(key.to_string())
        })
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<Key, E> {
        Ok(if key == TAG {
            Key::Tag
        } else {
            Key::Other(key)
        })
    }
}

/// The object once its tag is next: the variant is read from it directly, then its fields.
struct TagNext<M> {
    map: M,
}

impl<'de, M: MapAccess<'de>> Deserializer<'de> for TagNext<M> {
    type Error = M::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, M::Error> {
        visitor.visit_enum(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl<'de, M: MapAccess<'de>> EnumAccess<'de> for TagNext<M> {
    type Error = M::Error;
    type Variant = Fields<M>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        mut self,
        seed: V,
    ) -> Result<(V::Value, Fields<M>), M::Error> {
        // The tag's value is read as the derived reader reads it: straight from the input.
        let variant = self.map.next_value_seed(seed)?;
        Ok((variant, Fields(self.map)))
    }
}

/// The fields of the variant: the rest of the object.
struct Fields<M>(M);

impl<'de, M: MapAccess<'de>> VariantAccess<'de> for Fields<M> {
    type Error = M::Error;

    fn unit_variant(mut self) -> Result<(), M::Error> {
        // Whatever else the object holds is ignored, as the derived reader ignores it.
        while self.next_key::<IgnoredAny>()?.is_some() {
            self.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _seed: T) -> Result<T::Value, M::Error> {
        // `Event` has none (a test says so by reading every variant).
        Err(not_struct_variant(Unexpected::NewtypeVariant))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, M::Error> {
        Err(not_struct_variant(Unexpected::TupleVariant))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, M::Error> {
        visitor.visit_map(self)
    }
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for Fields<M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        self.0.next_key_seed(NotTag(seed))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, M::Error> {
        self.0.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

/// A key after the tag, for the variant's reader: a second tag is refused, as the derived
/// reader refuses it.
struct NotTag<K>(K);

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for NotTag<K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, K: DeserializeSeed<'de>> Visitor<'de> for NotTag<K> {
    type Value = K::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a type tag `{TAG}` or any other value")
    }

    fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<K::Value, E> {
        if key == TAG {
            return Err(E::duplicate_field(TAG));
        }
        self.0.deserialize(BorrowedStrDeserializer::new(key))
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<K::Value, E> {
        if key == TAG {
            return Err(E::duplicate_field(TAG));
        }
        self.0.deserialize(StrDeserializer::new(key))
    }

    fn visit_string<E: de::Error>(self, key: String) -> Result<K::Value, E> {
        if key == TAG {
            return Err(E::duplicate_field(TAG));
        }
        self.0.deserialize(StringDeserializer::new(key))
    }
}

/// An event given as a sequence, kept whole: the tag and the fields in order.
struct KeptSeq {
    tag: Value,
    rest: Vec<Value>,
}

impl<'de> Deserializer<'de> for KeptSeq {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_enum(self)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

impl<'de> EnumAccess<'de> for KeptSeq {
    type Error = serde_json::Error;
    type Variant = KeptFields;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, KeptFields), serde_json::Error> {
        let variant = seed.deserialize(self.tag)?;
        Ok((variant, KeptFields(self.rest)))
    }
}

struct KeptFields(Vec<Value>);

impl KeptFields {
    /// Runs `visitor` over the fields; every one must be taken, as the derived reader requires.
    fn visit<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, serde_json::Error> {
        let mut fields = SeqDeserializer::new(self.0.into_iter());
        let value = visitor.visit_seq(&mut fields)?;
        fields.end()?;
        Ok(value)
    }
}

impl<'de> VariantAccess<'de> for KeptFields {
    type Error = serde_json::Error;

    fn unit_variant(self) -> Result<(), serde_json::Error> {
        self.visit(UnitVisitor)
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        _seed: T,
    ) -> Result<T::Value, serde_json::Error> {
        Err(not_struct_variant(Unexpected::NewtypeVariant))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        _visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        Err(not_struct_variant(Unexpected::TupleVariant))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, serde_json::Error> {
        self.visit(visitor)
    }
}

/// A unit variant given as a sequence takes none of it (what is left is then refused).
struct UnitVisitor;

impl<'de> Visitor<'de> for UnitVisitor {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a unit variant")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, _seq: S) -> Result<(), S::Error> {
        Ok(())
    }
}

/// `Event`'s variants are structs or units: the error for any other shape.
fn not_struct_variant<E: de::Error>(found: Unexpected<'_>) -> E {
    E::invalid_type(found, &"a struct or unit variant")
}
