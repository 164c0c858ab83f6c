//! redis-server for the lease rows: started on a free 127.0.0.1 port with persistence off
//! (`--save '' --appendonly no`), stopped at the end; and a minimal RESP client over one
//! `TcpStream` (`TCP_NODELAY`, one request, then its reply — no pipelining), as a
//! synchronous client library would do it.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server this process started.
pub struct Server {
    child: Child,
    pub port: u16,
    pub version: String,
}

impl Server {
    /// Starts redis-server with its working directory in `directory`; `None` when the program
    /// is not installed.
    pub fn start(directory: &Path) -> io::Result<Option<Server>> {
        let version = match Command::new("redis-server").arg("--version").output() {
            Ok(output) => String::from_utf8_lossy(&output.stdout).trim().to_owned(),
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        std::fs::create_dir_all(directory)?;
        // A free port: bind port 0, read it, let it go (a race with another program is
        // possible but unlikely; the start then fails loudly).
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--daemonize", "no"])
            .args(["--loglevel", "warning"])
            .arg("--dir")
            .arg(directory)
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
                if matches!(client.command(&[b"PING"]), Ok(reply) if reply == "+PONG") {
                    return Ok(Some(server));
                }
            }
            if let Some(status) = server.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "redis-server exited at start: {status}"
                )));
            }
            if Instant::now() > deadline {
                server.stop();
                return Err(io::Error::other("redis-server did not answer PING in 10 s"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `SHUTDOWN NOSAVE`, then waits for the process (killing it if it lingers).
    pub fn stop(&mut self) {
        if let Ok(mut client) = Client::connect(self.port) {
            let _ = client.send(&[b"SHUTDOWN", b"NOSAVE"]);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

/// One connection speaking RESP2.
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

    fn send(&mut self, arguments: &[&[u8]]) -> io::Result<()> {
        self.request.clear();
        self.request
            .extend_from_slice(format!("*{}\r\n", arguments.len()).as_bytes());
        for argument in arguments {
            self.request
                .extend_from_slice(format!("${}\r\n", argument.len()).as_bytes());
            self.request.extend_from_slice(argument);
            self.request.extend_from_slice(b"\r\n");
        }
        self.writer.write_all(&self.request)
    }

    /// Sends a command and returns its reply's first line (`+OK`, `:1`, `$-1`, `-ERR ...`).
    /// Bulk replies are read whole and returned as their header line.
    pub fn command(&mut self, arguments: &[&[u8]]) -> io::Result<String> {
        self.send(arguments)?;
        self.line.clear();
        self.reader.read_line(&mut self.line)?;
        let line = self.line.trim_end().to_owned();
        if let Some(length) = line.strip_prefix('$') {
            if let Ok(length) = length.parse::<usize>() {
                let mut body = vec![0u8; length + 2];
                io::Read::read_exact(&mut self.reader, &mut body)?;
            }
        }
        if line.is_empty() {
            return Err(io::Error::other("redis closed the connection"));
        }
        Ok(line)
    }
}
