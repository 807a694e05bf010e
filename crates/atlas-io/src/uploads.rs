//! S3 multipart uploads that were started and never completed nor aborted:
//! listed and aborted through S3's own API.
//!
//! A writer killed between its first part and `CompleteMultipartUpload`
//! leaves its parts stored (and billed) but invisible to every object
//! listing; only ListMultipartUploads shows them, and only
//! AbortMultipartUpload frees them. OpenDAL 0.59 aborts the uploads of its own
//! writers but offers no call for someone else's, so [`MultipartUploads`]
//! sends these two requests itself: built from the same [`S3Config`] as the
//! operator (endpoint, bucket, root, path or virtual-host style, and the same
//! credential chain: static keys, session token, environment, profile,
//! assumed role, instance metadata), signed with AWS SigV4 by `reqsign`
//! (what OpenDAL signs with), and sent through OpenDAL's process-wide HTTP
//! transport. They bypass the operator's layers, so they carry a
//! [`RetryPolicy`] of their own (the same backoff as OpenDAL's retry layer),
//! and a `CountingLayer` does not see them.
//!
//! Only S3 keeps uploads in this form. Azure's uncommitted blocks and GCS's
//! resumable sessions are discarded by the service after about a week.
//! S3 directory buckets (S3 Express) are not supported here.

use std::fmt;
use std::time::SystemTime;

use opendal::raw::{Timestamp, build_abs_path, normalize_root, percent_encode_path};
use opendal::services::S3Config;
use opendal::{Buffer, HttpTransporter};
use reqsign_aws_v4::{
    AssumeRoleCredentialProvider, Credential, DefaultCredentialProvider, RequestSigner,
    StaticCredentialProvider,
};
use reqsign_core::{Context, OsEnv, ProvideCredentialChain, Signer};
use serde::Deserialize;

use crate::error::{IoError, IoErrorKind};
use crate::retry::RetryPolicy;

/// The largest listing response accepted (S3 sends at most 1000 uploads a page,
/// well under 1 MiB).
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The most pages one listing follows.
const MAX_PAGES: usize = 10_000;

/// The most uploads one listing request can ask for (S3's default and limit).
const MAX_PAGE_SIZE: u16 = 1000;

/// One multipart upload in progress or abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Upload {
    /// The object it would create, relative to the operator's root.
    pub path: String,
    /// S3's id of the upload (what aborting it takes).
    pub upload_id: String,
    /// When it was started, where the server says.
    pub initiated: Option<SystemTime>,
}

/// Lists and aborts the multipart uploads of one S3 bucket, under one root,
/// with one operator's endpoint and credentials.
#[derive(Clone)]
pub struct MultipartUploads {
    /// The bucket's URL: `endpoint/bucket`, or `bucket.endpoint` in virtual-host style.
    bucket_url: String,
    /// The operator's root, `/`-framed (`/` for the bucket's top).
    root: String,
    /// `None`: requests go unsigned (`skip_signature`).
    signer: Option<Signer<Credential>>,
    request_payer: bool,
    retry: RetryPolicy,
    page_size: u16,
}

impl fmt::Debug for MultipartUploads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultipartUploads")
            .field("bucket_url", &self.bucket_url)
            .field("root", &self.root)
            .field("signed", &self.signer.is_some())
            .finish_non_exhaustive()
    }
}

impl MultipartUploads {
    /// The uploads reachable with `config`, as an S3 operator built from the
    /// same configuration would reach them. Sends nothing; installs OpenDAL's
    /// HTTP transport if nothing has yet ([`crate::install_http_transport`]).
    ///
    /// The configuration is taken as given: whoever resolved the location
    /// (`atlas::Location`) already filled endpoint and region from the
    /// environment, so both objects reach the same server.
    /// Fails with [`IoErrorKind::Unsupported`] for a directory bucket and
    /// [`IoErrorKind::Other`] for a configuration the operator would refuse
    /// (no bucket, no region).
    pub fn for_s3(config: &S3Config) -> Result<Self, IoError> {
        crate::install_http_transport();
        let refuse = |kind, message: &str| IoError::new(kind, "configure", &config.bucket, message);
        let bucket = config.bucket.as_str();
        if bucket.is_empty() || (config.enable_virtual_host_style && bucket.contains('.')) {
            return Err(refuse(IoErrorKind::Other, "the bucket is misconfigured"));
        }
        if bucket.ends_with("--x-s3") {
            return Err(refuse(
                IoErrorKind::Unsupported,
                "multipart uploads of S3 directory buckets are not listed",
            ));
        }
        let region = config
            .region
            .clone()
            .ok_or_else(|| refuse(IoErrorKind::Other, "the S3 region is missing"))?;
        let endpoint = config.endpoint.clone();
        #[allow(deprecated)]
        let unsigned = config.skip_signature || config.allow_anonymous;
        Ok(MultipartUploads {
            bucket_url: bucket_url(
                endpoint.as_deref(),
                bucket,
                &region,
                config.enable_virtual_host_style,
            ),
            root: normalize_root(config.root.as_deref().unwrap_or_default()),
            signer: (!unsigned).then(|| signer(config, &region)),
            request_payer: config.enable_request_payer,
            retry: RetryPolicy::default(),
            page_size: MAX_PAGE_SIZE,
        })
    }

    /// Sets how requests are retried after a temporary failure (a 5xx, a
    /// 429, a timeout, a dropped connection) and how long one may take
    /// ([`RetryPolicy::timeout`]); [`RetryPolicy::default`] until set.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Sets how many uploads one listing request asks for, from 1 to 1000
    /// (the default, and S3's limit).
    pub fn page_size(mut self, uploads: u16) -> Self {
        self.page_size = uploads.clamp(1, MAX_PAGE_SIZE);
        self
    }

    /// The uploads of objects under `prefix` (relative to the root; `""` for
    /// everything under it), ordered by path then upload id.
    ///
    /// Cost: one ListMultipartUploads request per page of uploads (1000 by
    /// default; one request when there are none).
    pub async fn list(&self, prefix: &str) -> Result<Vec<Upload>, IoError> {
        let root_key = build_abs_path(&self.root, "");
        let key_prefix = build_abs_path(&self.root, prefix.trim_start_matches('/'));
        let mut markers: Option<(String, String)> = None;
        let mut found = Vec::new();
        for _ in 0..MAX_PAGES {
            let mut url = format!(
                "{}?uploads&prefix={}",
                self.bucket_url,
                percent_encode_path(&key_prefix)
            );
            if self.page_size != MAX_PAGE_SIZE {
                url.push_str(&format!("&max-uploads={}", self.page_size));
            }
            if let Some((key, id)) = &markers {
                url.push_str(&format!(
                    "&key-marker={}&upload-id-marker={}",
                    percent_encode_path(key),
                    percent_encode_path(id)
                ));
            }
            let body = self
                .send(http::Method::GET, &url, LIST, prefix)
                .await?
                .ok_or_else(|| {
                    IoError::new(IoErrorKind::NotFound, LIST, prefix, "no such bucket")
                })?;
            let page = parse_list_page(&body, prefix)?;
            found.extend(page.uploads.into_iter().filter_map(|u| {
                Some(Upload {
                    path: u.key.strip_prefix(&root_key)?.to_owned(),
                    upload_id: u.upload_id,
                    initiated: u.initiated,
                })
            }));
            match page.next {
                None => {
                    found.sort_by(|a, b| (&a.path, &a.upload_id).cmp(&(&b.path, &b.upload_id)));
                    return Ok(found);
                }
                Some(next) if markers.as_ref() == Some(&next) => {
                    return Err(IoError::new(
                        IoErrorKind::InvalidResponse,
                        LIST,
                        prefix,
                        "the listing says it is truncated but does not advance",
                    ));
                }
                Some(next) => markers = Some(next),
            }
        }
        Err(IoError::new(
            IoErrorKind::InvalidResponse,
            LIST,
            prefix,
            format!("the listing goes on beyond {MAX_PAGES} pages"),
        ))
    }

    /// Aborts `upload`: the server drops its parts. An upload already gone
    /// (completed or aborted meanwhile) is not an error.
    pub async fn abort(&self, upload: &Upload) -> Result<(), IoError> {
        let key = build_abs_path(&self.root, upload.path.trim_start_matches('/'));
        let url = format!(
            "{}/{}?uploadId={}",
            self.bucket_url,
            percent_encode_path(&key),
            percent_encode_path(&upload.upload_id)
        );
        self.send(http::Method::DELETE, &url, ABORT, &upload.path)
            .await
            .map(drop)
    }

    /// Sends one request, again after each temporary failure while the
    /// policy allows; the body of a 2xx answer, `None` for a 404.
    async fn send(
        &self,
        method: http::Method,
        url: &str,
        operation: &'static str,
        path: &str,
    ) -> Result<Option<Buffer>, IoError> {
        let mut delays = self.retry.delays();
        loop {
            match self.send_once(method.clone(), url, operation, path).await {
                Err(e) if e.is_transient() => {
                    let Some(delay) = delays.next() else {
                        return Err(e);
                    };
                    tracing::warn!(
                        operation,
                        after_ms = delay.as_millis() as u64,
                        "retrying after a temporary failure: {e}"
                    );
                    tokio::time::sleep(delay).await;
                }
                done => return done,
            }
        }
    }

    /// Signs and sends one request.
    async fn send_once(
        &self,
        method: http::Method,
        url: &str,
        operation: &'static str,
        path: &str,
    ) -> Result<Option<Buffer>, IoError> {
        let fail = |kind, message: String| IoError::new(kind, operation, path, message);
        let mut builder = http::Request::builder().method(method).uri(url);
        if self.request_payer {
            builder = builder.header("x-amz-request-payer", "requester");
        }
        let req = builder
            .header(http::header::CONTENT_LENGTH, 0)
            .body(Buffer::new())
            .map_err(|e| fail(IoErrorKind::Other, format!("cannot build the request: {e}")))?;
        let (mut parts, body) = req.into_parts();
        if let Some(signer) = &self.signer {
            signer
                .sign(&mut parts, None)
                .await
                .map_err(|e| fail(sign_error_kind(&e), format!("cannot sign the request: {e}")))?;
            // As OpenDAL does: the HTTP client sets Host itself.
            parts.headers.remove(http::header::HOST);
        }
        let req = http::Request::from_parts(parts, body);
        let transport = HttpTransporter::default();
        let timeout = self.retry.timeout;
        let resp = tokio::time::timeout(timeout, transport.send(req))
            .await
            .map_err(|_| {
                fail(
                    IoErrorKind::Transient,
                    format!("no answer within {timeout:?}"),
                )
            })?
            .map_err(|e| IoError::from_opendal(e, operation, path))?;
        let status = resp.status();
        let body = resp.into_body();
        if status.is_success() {
            if body.len() > MAX_RESPONSE_BYTES {
                return Err(fail(
                    IoErrorKind::InvalidResponse,
                    format!(
                        "a {} byte answer is larger than any listing page",
                        body.len()
                    ),
                ));
            }
            return Ok(Some(body));
        }
        if status == http::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let kind = match status.as_u16() {
            403 => IoErrorKind::PermissionDenied,
            501 => IoErrorKind::Unsupported,
            408 | 429 | 500 | 502 | 503 | 504 => IoErrorKind::Transient,
            _ => IoErrorKind::Other,
        };
        Err(fail(kind, format!("{status}: {}", error_summary(&body))))
    }
}

const LIST: &str = "list_multipart_uploads";
const ABORT: &str = "abort_multipart_upload";

/// `https://endpoint/bucket` or `https://bucket.endpoint`, as OpenDAL's S3 builder makes it.
fn bucket_url(endpoint: Option<&str>, bucket: &str, region: &str, virtual_host: bool) -> String {
    let mut url = match endpoint {
        Some(e) if e.starts_with("http") => e.to_owned(),
        Some(e) => format!("https://{e}"),
        None => "https://s3.amazonaws.com".to_owned(),
    };
    url = url.replace(&format!("//{bucket}."), "//");
    url = url.trim_end_matches('/').to_owned();
    // Default ports are left out, as a URL parser would.
    for (scheme, port) in [("https://", ":443"), ("http://", ":80")] {
        if url.starts_with(scheme) && url.ends_with(port) {
            url.truncate(url.len() - port.len());
        }
    }
    if url == "https://s3.amazonaws.com" {
        url = format!("https://s3.{region}.amazonaws.com");
    }
    if virtual_host {
        url.replacen("//", &format!("//{bucket}."), 1)
    } else {
        format!("{url}/{bucket}")
    }
}

/// The credential chain OpenDAL's S3 builder makes of the same configuration.
fn signer(config: &S3Config, region: &str) -> Signer<Credential> {
    let ctx = Context::new()
        .with_file_read(reqsign_file_read_tokio::TokioFileRead)
        .with_http_send(HttpTransporter::default())
        .with_env(OsEnv);
    let mut default = DefaultCredentialProvider::builder();
    if config.disable_config_load {
        default = default.no_env().no_profile();
    } else if let Some(profile) = config.profile.as_deref().filter(|p| !p.is_empty()) {
        default = default.with_profile(profile);
    }
    if config.disable_ec2_metadata {
        default = default.no_imds();
    }
    let mut chain = ProvideCredentialChain::new().push(default.build());
    if let (Some(ak), Some(sk)) = (&config.access_key_id, &config.secret_access_key) {
        let key = match config.session_token.as_deref() {
            Some(token) => StaticCredentialProvider::new(ak, sk).with_session_token(token),
            None => StaticCredentialProvider::new(ak, sk),
        };
        chain = chain.push_front(key);
    }
    if let Some(role_arn) = &config.role_arn {
        let sts = Signer::new(ctx.clone(), chain, RequestSigner::new("sts", region));
        let mut role = AssumeRoleCredentialProvider::new(role_arn.clone(), sts)
            .with_region(region.to_owned())
            .with_regional_sts_endpoint();
        if let Some(id) = &config.external_id {
            role = role.with_external_id(id.clone());
        }
        if let Some(name) = &config.role_session_name {
            role = role.with_role_session_name(name.clone());
        }
        if let Some(secs) = config.assume_role_duration_seconds {
            role = role.with_duration_seconds(secs);
        }
        if let Some(tags) = &config.assume_role_session_tags {
            role = role.with_tags(tags.iter().map(|(k, v)| (k.clone(), v.clone())).collect());
        }
        chain = ProvideCredentialChain::new().push(role);
    }
    Signer::new(ctx, chain, RequestSigner::new("s3", region))
}

fn sign_error_kind(e: &reqsign_core::Error) -> IoErrorKind {
    if e.is_retryable() {
        return IoErrorKind::Transient;
    }
    match e.kind() {
        reqsign_core::ErrorKind::PermissionDenied => IoErrorKind::PermissionDenied,
        reqsign_core::ErrorKind::RateLimited => IoErrorKind::Transient,
        _ => IoErrorKind::Other,
    }
}

/// One page of a listing: the uploads, and the markers of the next page if truncated.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Page {
    pub(crate) uploads: Vec<RawUpload>,
    pub(crate) next: Option<(String, String)>,
}

/// An upload as the server names it (the key is absolute in the bucket).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct RawUpload {
    pub(crate) key: String,
    pub(crate) upload_id: String,
    pub(crate) initiated: Option<SystemTime>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct ListResultXml {
    #[serde(default)]
    is_truncated: Option<String>,
    #[serde(default)]
    next_key_marker: Option<String>,
    #[serde(default)]
    next_upload_id_marker: Option<String>,
    #[serde(default, rename = "Upload")]
    uploads: Vec<UploadXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct UploadXml {
    key: String,
    upload_id: String,
    #[serde(default)]
    initiated: Option<String>,
}

/// Parses one ListMultipartUploads answer (for the uploads under `prefix`);
/// refuses with [`IoErrorKind::InvalidResponse`], never panics on, any bytes
/// that are not one.
pub(crate) fn parse_list_page(body: &Buffer, prefix: &str) -> Result<Page, IoError> {
    parse_page(body).map_err(|why| IoError::new(IoErrorKind::InvalidResponse, LIST, prefix, why.0))
}

/// Why a listing answer was refused.
struct Malformed(String);

fn parse_page(body: &Buffer) -> Result<Page, Malformed> {
    let bytes = body.to_bytes();
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| Malformed(format!("the listing is not UTF-8: {e}")))?;
    match root_element(text)? {
        ref name if name == "ListMultipartUploadsResult" => {}
        other => {
            return Err(Malformed(format!(
                "expected a ListMultipartUploadsResult, got <{other}>"
            )));
        }
    }
    let xml: ListResultXml = quick_xml::de::from_str(text)
        .map_err(|e| Malformed(format!("the listing does not parse: {e}")))?;
    let truncated = match xml.is_truncated.as_deref().map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => return Err(Malformed(format!("IsTruncated is {other:?}"))),
    };
    let mut uploads = Vec::with_capacity(xml.uploads.len());
    for u in xml.uploads {
        if u.key.is_empty() || u.upload_id.is_empty() {
            return Err(Malformed("an upload without key or id".into()));
        }
        let initiated = match u.initiated.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(t) => Some(SystemTime::from(t.parse::<Timestamp>().map_err(|_| {
                Malformed(format!("the upload of {:?} started at {t:?}", u.key))
            })?)),
        };
        uploads.push(RawUpload {
            key: u.key,
            upload_id: u.upload_id,
            initiated,
        });
    }
    let next = if truncated {
        match (xml.next_key_marker, xml.next_upload_id_marker) {
            (Some(key), Some(id)) if !key.is_empty() => Some((key, id)),
            _ => {
                return Err(Malformed(
                    "a truncated listing without the next page's markers".into(),
                ));
            }
        }
    } else {
        None
    };
    Ok(Page { uploads, next })
}

/// The name of the document's first element.
fn root_element(text: &str) -> Result<String, Malformed> {
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e)) => {
                return Ok(e.local_name().into_inner().to_owned());
            }
            Ok(quick_xml::events::Event::Eof) => {
                return Err(Malformed("the listing holds no element".into()));
            }
            Ok(_) => {}
            Err(e) => return Err(Malformed(format!("the listing does not parse: {e}"))),
        }
    }
}

/// S3's error code and message, or the first bytes of whatever came instead.
fn error_summary(body: &Buffer) -> String {
    #[derive(Deserialize, Default)]
    #[serde(default, rename_all = "PascalCase")]
    struct ErrorXml {
        code: String,
        message: String,
    }
    let bytes = body.to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    match quick_xml::de::from_str::<ErrorXml>(&text) {
        Ok(e) if !e.code.is_empty() => format!("{} {}", e.code, e.message).trim().to_owned(),
        _ => text.chars().take(200).collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn parse(text: &str) -> Result<Page, IoError> {
        parse_list_page(&Buffer::from(text.as_bytes().to_vec()), "c/")
    }

    fn is_invalid_response(r: &Result<Page, IoError>) -> bool {
        matches!(r, Err(e) if e.kind() == IoErrorKind::InvalidResponse && e.path() == "c/")
    }

    const TWO: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
  <NextKeyMarker>c/data.atlas</NextKeyMarker><NextUploadIdMarker>u2</NextUploadIdMarker>
  <MaxUploads>2</MaxUploads><IsTruncated>true</IsTruncated>
  <Upload><Key>c/data.atlas</Key><UploadId>u1</UploadId>
    <Initiated>2026-11-30T10:00:00.000Z</Initiated><StorageClass>STANDARD</StorageClass></Upload>
  <Upload><Key>c/data.atlas</Key><UploadId>u2</UploadId><Owner><ID>x</ID></Owner>
    <Initiated>2026-11-30T11:00:00Z</Initiated></Upload>
</ListMultipartUploadsResult>"#;

    #[test]
    fn a_listing_page_yields_its_uploads_and_the_next_markers() {
        let page = parse(TWO).unwrap();
        assert_eq!(page.uploads.len(), 2);
        assert_eq!(page.uploads[0].key, "c/data.atlas");
        assert_eq!(page.uploads[1].upload_id, "u2");
        let t0 = page.uploads[0].initiated.unwrap();
        let t1 = page.uploads[1].initiated.unwrap();
        assert_eq!(t1.duration_since(t0).unwrap(), Duration::from_secs(3600));
        assert_eq!(page.next, Some(("c/data.atlas".into(), "u2".into())));
    }

    #[test]
    fn an_empty_listing_has_no_uploads_and_no_next_page() {
        let page = parse(
            "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>\
             </ListMultipartUploadsResult>",
        )
        .unwrap();
        assert_eq!(page, Page::default());
        assert_eq!(
            parse("<ListMultipartUploadsResult/>").unwrap(),
            Page::default()
        );
    }

    #[test]
    fn the_listing_parser_refuses_what_is_not_a_listing() {
        let cases = [
            "",
            "garbage",
            "<Error><Code>AccessDenied</Code></Error>",
            "<ListMultipartUploadsResult><Upload><Key>k</Key></Upload></ListMultipartUploadsResult>",
            "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId>\
             <Initiated>yesterday</Initiated></Upload></ListMultipartUploadsResult>",
            "<ListMultipartUploadsResult><IsTruncated>maybe</IsTruncated></ListMultipartUploadsResult>",
            "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>",
            "<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u",
            "<ListMultipartUploadsResult><Upload><Key></Key><UploadId>u</UploadId></Upload>\
             </ListMultipartUploadsResult>",
        ];
        for case in cases {
            assert!(is_invalid_response(&parse(case)), "{case:?}");
        }
        let not_utf8 = parse_list_page(&Buffer::from(vec![0xff, 0xfe, b'<']), "c/");
        assert!(is_invalid_response(&not_utf8));
    }

    #[test]
    fn the_listing_parser_never_panics_on_mangled_bytes() {
        // Every prefix of a real page, and the page with bytes overwritten
        // by a fixed pseudo-random sequence (SplitMix64).
        let page = TWO.as_bytes();
        for end in 0..page.len() {
            let _ = parse_list_page(&Buffer::from(page[..end].to_vec()), "");
        }
        let mut state = 7u64;
        for _ in 0..2000 {
            let mut bytes = page.to_vec();
            for _ in 0..4 {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let at = (z % bytes.len() as u64) as usize;
                if let Some(b) = bytes.get_mut(at) {
                    *b = (z >> 32) as u8;
                }
            }
            let _ = parse_list_page(&Buffer::from(bytes), "");
        }
    }

    #[test]
    fn the_bucket_url_follows_the_operators_addressing_style() {
        assert_eq!(
            bucket_url(Some("http://127.0.0.1:9000/"), "b", "us-east-1", false),
            "http://127.0.0.1:9000/b"
        );
        assert_eq!(
            bucket_url(None, "b", "eu-west-1", false),
            "https://s3.eu-west-1.amazonaws.com/b"
        );
        assert_eq!(
            bucket_url(
                Some("https://b.s3.amazonaws.com:443"),
                "b",
                "eu-west-1",
                true
            ),
            "https://b.s3.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            bucket_url(Some("minio.local"), "b", "r", false),
            "https://minio.local/b"
        );
    }

    #[test]
    fn a_directory_bucket_is_unsupported_and_an_empty_one_misconfigured() {
        let mut config = S3Config::default();
        config.region = Some("us-east-1".into());
        let err = MultipartUploads::for_s3(&config).unwrap_err();
        assert_eq!(err.kind(), IoErrorKind::Other);
        config.bucket = "data--usw2-az1--x-s3".into();
        let err = MultipartUploads::for_s3(&config).unwrap_err();
        assert_eq!(err.kind(), IoErrorKind::Unsupported);
    }
}
