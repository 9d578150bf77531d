//! Shared assertions for the kcp type tests.

use pretty_assertions::assert_eq;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

/// Deserialises `json` as `T`, serialises it back and asserts the result is identical, so every
/// field name (and every field the type does not model) is proven to survive.
pub(crate) fn roundtrip<T: Serialize + DeserializeOwned>(json: &Value) -> T {
    let typed: T = match serde_json::from_value(json.clone()) {
        Ok(t) => t,
        Err(e) => panic!("deserialising {json:#}: {e}"),
    };
    let back = match serde_json::to_value(&typed) {
        Ok(v) => v,
        Err(e) => panic!("serialising: {e}"),
    };
    assert_eq!(&back, json);
    typed
}

/// Serialises `value` and asserts it equals `json` exactly.
pub(crate) fn serializes_to<T: Serialize>(value: &T, json: &Value) {
    let got = match serde_json::to_value(value) {
        Ok(v) => v,
        Err(e) => panic!("serialising: {e}"),
    };
    assert_eq!(&got, json);
}
