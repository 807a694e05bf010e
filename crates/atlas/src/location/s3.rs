//! S3 and S3-compatible servers: `s3://bucket/prefix`.

use atlas_io::MultipartUploads;
use opendal::{Configurator as _, Operator, services};

use super::{StorageOptions, bucket_and_root, configuration_error, env, finish, invalid, merged};
use crate::error::Result;

/// The operator, and the multipart uploads reached with the same configuration.
pub(super) async fn operator(
    rest: &str,
    options: &StorageOptions,
    location: &str,
) -> Result<(Operator, Option<MultipartUploads>)> {
    let (bucket, root) = bucket_and_root(rest, location, "bucket")?;
    let mut map = merged(
        options,
        [
            (
                "endpoint",
                env(options, &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]),
            ),
            (
                "region",
                env(options, &["AWS_REGION", "AWS_DEFAULT_REGION"]),
            ),
            ("access_key_id", env(options, &["AWS_ACCESS_KEY_ID"])),
            (
                "secret_access_key",
                env(options, &["AWS_SECRET_ACCESS_KEY"]),
            ),
            ("session_token", env(options, &["AWS_SESSION_TOKEN"])),
        ],
    );
    map.insert("bucket".into(), bucket.into());
    map.insert("root".into(), format!("/{root}"));
    if !map.contains_key("region") {
        let region = match map.get("endpoint") {
            // An S3-compatible server mostly ignores the region; sign for the default one.
            Some(_) => Some("us-east-1".to_owned()),
            None => services::S3::detect_region("https://s3.amazonaws.com", bucket).await,
        };
        let Some(region) = region else {
            return Err(invalid(
                location,
                "cannot tell the bucket's region; set AWS_REGION or the `region` option",
            ));
        };
        map.insert("region".into(), region);
    }
    if options.anonymous {
        for key in [
            "skip_signature",
            "disable_ec2_metadata",
            "disable_config_load",
        ] {
            map.insert(key.into(), "true".into());
        }
    }
    let config =
        services::S3Config::from_iter(map.clone()).map_err(|e| configuration_error(location, e))?;
    let uploads = match MultipartUploads::for_s3(&config) {
        Ok(uploads) => Some(uploads),
        Err(e) => {
            tracing::debug!(location, "multipart uploads not listed: {e}");
            None
        }
    };
    Ok((finish(location, "s3", map)?, uploads))
}
