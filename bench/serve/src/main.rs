//! `http-floor ADDR`: answers every request with `200 text/plain "1865193265891057664"`,
//! on the same runtime and socket options as `segflake serve`, so the difference to it is
//! what segflake's connections, routing and ID generation cost.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18081".into());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(&addr).await.expect("listen");
            let mut http = hyper::server::conn::http1::Builder::new();
            http.keep_alive(true);
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let service =
                    hyper::service::service_fn(|_req: Request<hyper::body::Incoming>| async {
                        let mut r =
                            Response::new(Full::new(Bytes::from_static(b"1865193265891057664")));
                        r.headers_mut().insert(
                            CONTENT_TYPE,
                            HeaderValue::from_static("text/plain; charset=utf-8"),
                        );
                        Ok::<_, Infallible>(r)
                    });
                let conn = http.serve_connection(TokioIo::new(stream), service);
                tokio::spawn(async move {
                    let _ = conn.await;
                });
            }
        });
}
