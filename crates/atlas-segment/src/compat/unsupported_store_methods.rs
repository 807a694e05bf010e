//! The `ObjectStore` methods array-format never calls (delete, list, copy),
//! answered `NotSupported` by every single-purpose store of this crate.

/// Expands, inside an `impl ObjectStore` block, to `delete_stream`, `list`,
/// `list_with_delimiter` and `copy_opts`, each answering `NotSupported` through
/// the `not_supported(what)` function of the module that invokes it.
macro_rules! refuse_delete_list_copy {
    () => {
        fn delete_stream(
            &self,
            locations: futures::stream::BoxStream<
                'static,
                object_store::Result<object_store::path::Path>,
            >,
        ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::path::Path>> {
            use futures::StreamExt;
            locations.map(|_| Err(not_supported("delete"))).boxed()
        }

        fn list(
            &self,
            _prefix: Option<&object_store::path::Path>,
        ) -> futures::stream::BoxStream<'static, object_store::Result<object_store::ObjectMeta>> {
            use futures::StreamExt;
            futures::stream::once(async { Err(not_supported("list")) }).boxed()
        }

        // Written as `#[async_trait]` would expand them: the attribute does not
        // reach into a macro invoked inside the impl block.
        fn list_with_delimiter<'life0, 'life1, 'async_trait>(
            &'life0 self,
            _prefix: Option<&'life1 object_store::path::Path>,
        ) -> std::pin::Pin<
            Box<
                dyn std::future::Future<Output = object_store::Result<object_store::ListResult>>
                    + Send
                    + 'async_trait,
            >,
        >
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async { Err(not_supported("list")) })
        }

        fn copy_opts<'life0, 'life1, 'life2, 'async_trait>(
            &'life0 self,
            _from: &'life1 object_store::path::Path,
            _to: &'life2 object_store::path::Path,
            _options: object_store::CopyOptions,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = object_store::Result<()>> + Send + 'async_trait>,
        >
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            'life2: 'async_trait,
            Self: 'async_trait,
        {
            Box::pin(async { Err(not_supported("copy")) })
        }
    };
}
