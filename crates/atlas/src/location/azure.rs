//! Azure Blob Storage: `az://container/prefix`.

use opendal::{Operator, services};

use super::{StorageOptions, bucket_and_root, configuration_error, env, finish, invalid, merged};
use crate::error::Result;

/// The operator of an Azure location.
pub(super) fn operator(rest: &str, options: &StorageOptions, location: &str) -> Result<Operator> {
    let (container, root) = bucket_and_root(rest, location, "container")?;
    let root = format!("/{root}");
    // A connection string configures endpoint, account and credentials at once;
    // OpenDAL parses it only through its builder.
    if let Some(conn) = env(options, &["AZURE_STORAGE_CONNECTION_STRING"])
        .filter(|_| options.get("endpoint").is_none() && options.get("account_name").is_none())
    {
        let mut builder = services::Azblob::from_connection_string(&conn)
            .map_err(|e| configuration_error(location, e))?
            .container(container)
            .root(&root);
        if options.anonymous {
            builder = builder.skip_signature();
        }
        return Operator::new(builder).map_err(|e| configuration_error(location, e));
    }
    let account = options.get("account_name").map(str::to_owned).or_else(|| {
        env(
            options,
            &["AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT"],
        )
    });
    let endpoint = env(options, &["AZURE_STORAGE_ENDPOINT"]).or_else(|| {
        account
            .as_ref()
            .map(|a| format!("https://{a}.blob.core.windows.net"))
    });
    let mut map = merged(
        options,
        [
            ("endpoint", endpoint),
            ("account_name", account),
            (
                "account_key",
                env(options, &["AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_KEY"]),
            ),
            ("sas_token", env(options, &["AZURE_STORAGE_SAS_TOKEN"])),
        ],
    );
    if !map.contains_key("endpoint") {
        return Err(invalid(
            location,
            "no Azure account; set AZURE_STORAGE_ACCOUNT (or AZURE_STORAGE_CONNECTION_STRING) or the `endpoint` option",
        ));
    }
    map.insert("container".into(), container.into());
    map.insert("root".into(), root);
    if options.anonymous {
        map.insert("skip_signature".into(), "true".into());
    }
    finish(location, "azblob", map)
}
