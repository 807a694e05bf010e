//! Google Cloud Storage: `gs://bucket/prefix`.

use opendal::Operator;

use super::{StorageOptions, bucket_and_root, env, finish, merged};
use crate::error::Result;

/// The operator of a GCS location.
pub(super) fn operator(rest: &str, options: &StorageOptions, location: &str) -> Result<Operator> {
    let (bucket, root) = bucket_and_root(rest, location, "bucket")?;
    let mut map = merged(
        options,
        [(
            "credential_path",
            env(options, &["GOOGLE_APPLICATION_CREDENTIALS"]),
        )],
    );
    map.insert("bucket".into(), bucket.into());
    map.insert("root".into(), format!("/{root}"));
    if options.anonymous {
        map.remove("credential_path");
        for key in [
            "skip_signature",
            "disable_vm_metadata",
            "disable_config_load",
        ] {
            map.insert(key.into(), "true".into());
        }
    }
    finish(location, "gcs", map)
}
