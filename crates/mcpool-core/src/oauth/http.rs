//! The Streamable HTTP client of a server that signs in: every request
//! carries `Authorization: Bearer <access token>` (refreshed first when near
//! its end); a 401 to a token gets one refresh and one retry (a 401 means
//! the server did not act on the request); a `403 insufficient_scope` asks
//! for a new sign-in with more scopes, a bounded number of times.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};

use super::signin::Signin;
use crate::upstream::kept_http::KeptClient;

type Error = StreamableHttpError<reqwest::Error>;

#[derive(Clone)]
pub struct SignedInClient {
    inner: KeptClient,
    signin: Arc<Signin>,
}

impl SignedInClient {
    pub fn new(inner: KeptClient, signin: Arc<Signin>) -> Self {
        SignedInClient { inner, signin }
    }

    /// Runs `call` with the bearer token and handles the server's verdict.
    /// `given` is a token rmcp passes itself (none is configured: unused).
    async fn with_token<T, F, Fut>(&self, given: Option<String>, call: F) -> Result<T, Error>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let token = match given {
            Some(t) => Some(t),
            None => self.signin.bearer().await?,
        };
        match call(token.clone()).await {
            Err(e) if rejected(&e) => {
                if let StreamableHttpError::AuthRequired(a) = &e {
                    self.signin.note_challenge(&a.www_authenticate_header);
                }
                let Some(sent) = token else {
                    return Err(e);
                };
                let fresh = self.signin.after_rejection(&sent).await?;
                call(Some(fresh)).await
            }
            Err(StreamableHttpError::InsufficientScope(e)) => {
                self.signin.note_challenge(&e.www_authenticate_header);
                if self.signin.step_up(e.required_scope.as_deref()) {
                    // Sign in again with the union of scopes: needs_auth.
                    Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                        e.www_authenticate_header.clone(),
                    )))
                } else {
                    Err(StreamableHttpError::InsufficientScope(e))
                }
            }
            other => other,
        }
    }
}

/// Whether the server refused the token (401, with or without a challenge).
fn rejected(e: &Error) -> bool {
    match e {
        StreamableHttpError::AuthRequired(_) => true,
        StreamableHttpError::HttpStatus(s) => s.status == 401,
        _ => false,
    }
}

impl StreamableHttpClient for SignedInClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_token(auth_header, |token| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.with_token(auth_header, |token| {
            self.inner
                .delete_session(uri.clone(), session_id.clone(), token, custom_headers.clone())
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.with_token(auth_header, |token| {
            self.inner.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        self.with_token(auth_header, |token| {
            self.inner.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
