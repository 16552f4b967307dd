//! A TCP forwarder on 127.0.0.1 that can be cut and restored, to take an API server off
//! the network and bring it back at the same address (TLS passes through untouched; the
//! apiserver's certificate names 127.0.0.1, so it stays valid).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use tokio::{
    io::copy_bidirectional,
    net::{TcpListener, TcpSocket, TcpStream},
    task::JoinHandle,
};

/// A forwarder from `addr` to a target. Dropping it stops it.
pub struct TcpProxy {
    /// The address clients connect to.
    pub addr: SocketAddr,
    target: SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(128)
}

impl TcpProxy {
    /// Starts forwarding a free port of 127.0.0.1 to `target`. Call it inside the Tokio
    /// runtime that should run it.
    pub async fn start(target: SocketAddr) -> std::io::Result<Self> {
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)))?;
        let addr = listener.local_addr()?;
        let proxy = Self {
            addr,
            target,
            tasks: Arc::new(Mutex::new(Vec::new())),
        };
        proxy.serve(listener);
        Ok(proxy)
    }

    fn serve(&self, listener: TcpListener) {
        let target = self.target;
        let tasks = self.tasks.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let connection = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(target).await {
                        let _ = copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                if let Ok(mut tasks) = tasks.lock() {
                    tasks.retain(|t| !t.is_finished());
                    tasks.push(connection);
                }
            }
        });
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.push(accept);
        }
    }

    /// Closes the port and every open connection: clients see resets, then refusals.
    pub fn cut(&self) {
        if let Ok(mut tasks) = self.tasks.lock() {
            for task in tasks.drain(..) {
                task.abort();
            }
        }
    }

    /// Listens on the same port again.
    pub fn restore(&self) -> std::io::Result<()> {
        self.cut();
        let listener = listen(self.addr)?;
        self.serve(listener);
        Ok(())
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.cut();
    }
}
