//! A SyncConfig as its watch and status writes receive it: the metadata
//! always, the rest as JSON when the decoder can read it.
//!
//! The API server accepts objects nested up to 10,000 levels; serde_json
//! stops at 128. A SyncConfig whose items nest deeper would otherwise fail
//! its decoding, and with it the watch: it would be silently ignored, and a
//! list holding it would fail for every SyncConfig. Here the object is taken
//! as raw text first (serde_json skips a raw value without counting its
//! depth), decoded if it can be, and otherwise kept as its metadata plus
//! the decoder's message, so that the planner reports it as invalid (its
//! copies stay, as for any invalid SyncConfig) and the others sync.
//!
//! What this module must NOT do: interpret the spec (that is
//! `mirra_mirror::compile`), or decode with a raised depth limit: the
//! planner and the compiler recurse over the JSON they get.

use std::borrow::Cow;

use kube::Resource;
use kube::api::{ApiResource, ObjectMeta};
use kube::core::DynamicResourceScope;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// A SyncConfig, decoded as far as it can be.
#[derive(Clone, Debug)]
pub struct ConfigObject {
    /// The object's metadata (managedFields dropped: nothing reads them).
    pub metadata: ObjectMeta,
    /// The whole object as JSON, or why it could not be decoded.
    pub body: Result<Value, String>,
}

/// What mirra says of a SyncConfig it cannot decode, for status, Events and
/// logs.
pub fn undecodable_message(error: &serde_json::Error) -> String {
    if error.to_string().starts_with("recursion limit exceeded") {
        "the SyncConfig is nested more than 128 levels deep, more than mirra's JSON decoder \
         accepts; flatten its items"
            .to_string()
    } else {
        format!("the SyncConfig could not be decoded: {error}")
    }
}

impl ConfigObject {
    /// Decodes one object's JSON text. Fails only when not even the
    /// metadata can be read (the text is not a JSON object).
    pub fn from_json_text(text: &str) -> Result<Self, serde_json::Error> {
        match serde_json::from_str::<Value>(text) {
            Ok(value) if !value.is_object() => Err(serde::de::Error::custom(
                "a SyncConfig must be a JSON object",
            )),
            Ok(mut value) => {
                let metadata = match value.get_mut("metadata") {
                    Some(m) => {
                        mirra_runtime::trim::strip_managed_fields_json(m);
                        ObjectMeta::deserialize(&*m)?
                    }
                    None => ObjectMeta::default(),
                };
                Ok(Self {
                    metadata,
                    body: Ok(value),
                })
            }
            Err(error) => {
                // Reading only the metadata skips the other fields without
                // counting their depth.
                #[derive(Deserialize)]
                struct MetadataOnly {
                    #[serde(default)]
                    metadata: ObjectMeta,
                }
                let MetadataOnly { mut metadata } = serde_json::from_str(text)?;
                mirra_runtime::trim::strip_managed_fields(&mut metadata);
                Ok(Self {
                    metadata,
                    body: Err(undecodable_message(&error)),
                })
            }
        }
    }

    /// The stored `status`, when the object decoded and has one.
    pub fn status(&self) -> Option<&Value> {
        self.body.as_ref().ok().and_then(|v| v.get("status"))
    }
}

impl<'de> Deserialize<'de> for ConfigObject {
    fn deserialize<D>(deserializer: D) -> Result<Self, D::Error>
    where
        D: serde::Deserializer<'de>,
    {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Self::from_json_text(raw.get()).map_err(serde::de::Error::custom)
    }
}

impl Resource for ConfigObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.kind)
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.group)
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.version)
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.api_version)
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        Cow::Borrowed(&dt.plural)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::WatchEvent;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    fn config_text(spec_depth: usize) -> String {
        format!(
            r#"{{"apiVersion":"sync.appuio.ch/v1alpha1","kind":"SyncConfig","metadata":{{"name":"deep","namespace":"ops","uid":"u1","resourceVersion":"5","managedFields":[{{"manager":"x"}}]}},"spec":{{"x":{}}}}}"#,
            nested(spec_depth)
        )
    }

    #[test]
    fn a_shallow_config_decodes_whole_without_managed_fields() {
        let o = ConfigObject::from_json_text(&config_text(3)).unwrap();
        assert_eq!(o.metadata.name.as_deref(), Some("deep"));
        assert!(o.metadata.managed_fields.is_none());
        let body = o.body.unwrap();
        assert!(body["metadata"].get("managedFields").is_none());
        assert_eq!(body["spec"]["x"], serde_json::json!([[[1]]]));
    }

    #[test]
    fn a_config_deeper_than_the_decoder_keeps_its_metadata_and_says_why() {
        let o = ConfigObject::from_json_text(&config_text(300)).unwrap();
        assert_eq!(o.metadata.name.as_deref(), Some("deep"));
        assert_eq!(o.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(o.metadata.resource_version.as_deref(), Some("5"));
        assert!(o.metadata.managed_fields.is_none());
        let why = o.body.unwrap_err();
        assert!(why.contains("nested more than 128 levels"), "{why}");
    }

    #[test]
    fn a_watch_event_and_a_list_item_carry_deep_configs() {
        // The event wrapper adds a level; with the raw capture the object's
        // depth counts from the object.
        let line = format!(r#"{{"type":"ADDED","object":{}}}"#, config_text(124));
        let event: WatchEvent<ConfigObject> = serde_json::from_str(&line).unwrap();
        let WatchEvent::Added(o) = event else {
            panic!("not an ADDED event");
        };
        assert!(o.body.is_ok(), "{:?}", o.body);
        let line = format!(r#"{{"type":"MODIFIED","object":{}}}"#, config_text(1000));
        let event: WatchEvent<ConfigObject> = serde_json::from_str(&line).unwrap();
        let WatchEvent::Modified(o) = event else {
            panic!("not a MODIFIED event");
        };
        assert!(o.body.is_err());
    }

    #[test]
    fn text_that_is_not_an_object_is_an_error_not_a_panic() {
        for bad in [
            "",
            "[]",
            "1",
            "{",
            r#"{"metadata":[]}"#,
            r#"{"metadata":{"name":1}}"#,
        ] {
            assert!(ConfigObject::from_json_text(bad).is_err(), "{bad}");
        }
        // Too deep and broken metadata: still an error.
        let text = format!(r#"{{"metadata":{{"name":7}},"spec":{}}}"#, nested(300));
        assert!(ConfigObject::from_json_text(&text).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_text_decodes_or_errs_without_panicking(text in ".{0,200}") {
            let _ = ConfigObject::from_json_text(&text);
        }

        #[test]
        fn nesting_at_any_depth_keeps_the_name(depth in 0usize..600) {
            let o = ConfigObject::from_json_text(&config_text(depth)).unwrap();
            proptest::prop_assert_eq!(o.metadata.name.as_deref(), Some("deep"));
            // The spec level and the object level count as well.
            proptest::prop_assert_eq!(o.body.is_ok(), depth + 3 <= 128);
        }
    }
}
