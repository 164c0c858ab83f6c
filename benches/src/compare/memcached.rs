//! memcached for the lease rows: started on a free 127.0.0.1 port (UDP off), stopped at the
//! end; and a minimal text-protocol client over one `TcpStream` (`TCP_NODELAY`, one request,
//! then its reply), as a synchronous client library would do it. A lease is `add key` with an
//! expiry (it fails if the key exists) and its release is `delete key`: the usual memcached
//! lock recipe.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A memcached this process started.
pub struct Server {
    child: Child,
    pub port: u16,
    pub version: String,
}

impl Server {
    /// Starts memcached; `None` when the program is not installed.
    pub fn start() -> io::Result<Option<Server>> {
        let version = match Command::new("memcached").arg("-V").output() {
            Ok(output) => String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        // A free port, as for redis-server (see redis.rs).
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut command = Command::new("memcached");
        command
            .args(["-l", "127.0.0.1"])
            .args(["-p", &port.to_string()])
            .args(["-U", "0"])
            .args(["-m", "64"]);
        // SAFETY: geteuid has no preconditions. memcached refuses to run as root unless told
        // which user to be.
        if unsafe { libc::geteuid() } == 0 {
            command.args(["-u", "root"]);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut server = Server {
            child,
            port,
            version,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(mut client) = Client::connect(port) {
                if matches!(client.request(b"version\r\n"), Ok(reply) if reply.starts_with("VERSION"))
                {
                    return Ok(Some(server));
                }
            }
            if let Some(status) = server.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "memcached exited at start: {status}"
                )));
            }
            if Instant::now() > deadline {
                server.stop();
                return Err(io::Error::other(
                    "memcached did not answer `version` in 10 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop();
        }
    }
}

/// One connection speaking memcached's text protocol.
pub struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    request: Vec<u8>,
    line: String,
}

impl Client {
    pub fn connect(port: u16) -> io::Result<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_nodelay(true)?;
        Ok(Client {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
            request: Vec::with_capacity(256),
            line: String::with_capacity(64),
        })
    }

    /// Sends `request` (whole lines) and returns the first line of the reply.
    fn request(&mut self, request: &[u8]) -> io::Result<String> {
        self.writer.write_all(request)?;
        self.line.clear();
        self.reader.read_line(&mut self.line)?;
        if self.line.is_empty() {
            return Err(io::Error::other("memcached closed the connection"));
        }
        Ok(self.line.trim_end().to_owned())
    }

    /// `add key 0 expiry_seconds`: true when stored, false when the key existed.
    pub fn add(&mut self, key: &[u8], value: &[u8], expiry_seconds: u32) -> io::Result<bool> {
        let mut request = std::mem::take(&mut self.request);
        request.clear();
        request.extend_from_slice(b"add ");
        request.extend_from_slice(key);
        request.extend_from_slice(format!(" 0 {expiry_seconds} {}\r\n", value.len()).as_bytes());
        request.extend_from_slice(value);
        request.extend_from_slice(b"\r\n");
        let reply = self.request(&request);
        self.request = request;
        match reply?.as_str() {
            "STORED" => Ok(true),
            "NOT_STORED" => Ok(false),
            other => Err(io::Error::other(format!("add: unexpected reply {other:?}"))),
        }
    }

    /// `delete key`: true when the key existed.
    pub fn delete(&mut self, key: &[u8]) -> io::Result<bool> {
        let mut request = std::mem::take(&mut self.request);
        request.clear();
        request.extend_from_slice(b"delete ");
        request.extend_from_slice(key);
        request.extend_from_slice(b"\r\n");
        let reply = self.request(&request);
        self.request = request;
        match reply?.as_str() {
            "DELETED" => Ok(true),
            "NOT_FOUND" => Ok(false),
            other => Err(io::Error::other(format!(
                "delete: unexpected reply {other:?}"
            ))),
        }
    }
}
