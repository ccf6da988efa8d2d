//! HTTP/1.1 via hyper 1 (cargo feature `hyper`, on the Tokio 1.43 and 1.53 lines). hyper's
//! http1 connection runs inside the connection task; it spawns nothing of its own.

use std::convert::Infallible;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpStream;

use crate::routes;

pub const NAME: &str = "hyper 1";

pub async fn serve_connection(stream: TcpStream) {
    let service = service_fn(|req: Request<Incoming>| {
        let method = req.method().as_str().to_owned();
        let path = req.uri().path().to_owned();
        async move {
            let reply = routes::handle(&method, &path).await;
            let mut response = Response::new(Full::new(Bytes::from(reply.body)));
            *response.status_mut() =
                StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            response
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
            Ok::<_, Infallible>(response)
        }
    });
    // Errors here are peers going away mid-request; nothing to report.
    let _ = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
