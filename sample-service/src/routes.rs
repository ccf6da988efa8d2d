//! Request handling shared by both HTTP front ends (hyper and the hand-written server): a
//! request is reduced to (method, path) and answered with a status and a text body.

use std::hint::black_box;
use std::time::Duration;

use crate::pathology::{self, Pathology, Triggered};

pub struct Reply {
    pub status: u16,
    pub body: String,
}

impl Reply {
    fn new(status: u16, body: impl Into<String>) -> Reply {
        Reply { status, body: body.into() }
    }
}

pub async fn handle(method: &str, path: &str) -> Reply {
    // The query string plays no part in routing.
    let path = path.split('?').next().unwrap_or(path);
    if method != "GET" && method != "HEAD" {
        return Reply::new(405, "only GET\n");
    }
    match path {
        "/" => Reply::new(200, "ok\n"),
        "/work" => {
            let result = work().await;
            Reply::new(200, format!("work done: {result}\n"))
        }
        "/pathology" | "/pathology/" => Reply::new(200, format!("{}\n", Pathology::names())),
        _ => match path.strip_prefix("/pathology/").map(Pathology::from_name) {
            Some(Some(p)) => match pathology::trigger(p) {
                Triggered::Spawned => Reply::new(202, format!("triggered {}\n", p.name())),
                Triggered::Capped => Reply::new(
                    429,
                    format!("{}: cap of {} tasks reached\n", p.name(), pathology::MAX_LEAKED_TASKS),
                ),
            },
            Some(None) => Reply::new(404, "unknown pathology\n"),
            None => Reply::new(404, "not found\n"),
        },
    }
}

/// The healthy `/work` handler: a short wait (as for a fast cache) and a small subtask whose
/// result is joined. Every poll is short; every wait is woken.
async fn work() -> u64 {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let subtask = tokio::spawn(work_subtask(black_box(1000))); // SPAWN-SITE: work_subtask
    subtask.await.unwrap_or(0)
}

async fn work_subtask(n: u64) -> u64 {
    let mut sum = 0u64;
    for i in 0..n {
        sum = sum.wrapping_add(black_box(i * i));
    }
    sum
}
