// A small HTTP + websocket server for the replay tests. HTTP requests are forwarded to the
// real relay (so the page, its assets and the PGN are the ones the host serves); the
// websocket at /ws is scripted by the test: it sends recorded (or edited) feed frames over a
// real RFC 6455 connection and records what the page sends back.

import crypto from 'node:crypto';
import http from 'node:http';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

/** One accepted websocket connection (server side: frames out unmasked). */
class Conn {
  constructor(socket, onText) {
    this.socket = socket;
    this.open = true;
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (buf.length < 2) return;
        const opcode = buf[0] & 0x0f;
        let len = buf[1] & 0x7f;
        let off = 2;
        if (len === 126) {
          if (buf.length < 4) return;
          len = buf.readUInt16BE(2);
          off = 4;
        } else if (len === 127) {
          if (buf.length < 10) return;
          len = Number(buf.readBigUInt64BE(2));
          off = 10;
        }
        const masked = (buf[1] & 0x80) !== 0;
        const mask = masked ? buf.subarray(off, off + 4) : null;
        if (masked) off += 4;
        if (buf.length < off + len) return;
        const payload = Buffer.from(buf.subarray(off, off + len));
        if (mask) for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
        buf = buf.subarray(off + len);
        if (opcode === 0x1) onText(payload.toString('utf8'));
        else if (opcode === 0x8) this.close(1000, '');
        else if (opcode === 0x9) this.frame(0xa, payload);
      }
    });
    socket.on('close', () => {
      this.open = false;
    });
    socket.on('error', () => {
      this.open = false;
    });
  }

  frame(opcode, payload) {
    if (!this.open) return;
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x80 | opcode, n]) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
    if (n >= 126 && n < 65536) {
      head[0] = 0x80 | opcode;
      head[1] = 126;
      head.writeUInt16BE(n, 2);
    } else if (n >= 65536) {
      head[0] = 0x80 | opcode;
      head[1] = 127;
      head.writeBigUInt64BE(BigInt(n), 2);
    }
    this.socket.write(Buffer.concat([head, payload]));
  }

  send(obj) {
    this.frame(0x1, Buffer.from(typeof obj === 'string' ? obj : JSON.stringify(obj), 'utf8'));
  }

  close(code = 1000, reason = '') {
    if (!this.open) return;
    const body = Buffer.alloc(2 + Buffer.byteLength(reason));
    body.writeUInt16BE(code, 0);
    body.write(reason, 2);
    this.frame(0x8, body);
    this.open = false;
    this.socket.end();
  }
}

/** Starts a replay server in front of `relayUrl`; resolves to its controller. */
export async function startReplayServer(relayUrl) {
  const ctl = {
    sockets: [],
    received: [], // { t, msg } sent by the page
    onConnect: null,
    current: () => ctl.sockets[ctl.sockets.length - 1],
    send: (obj) => ctl.current().send(obj),
  };
  const server = http.createServer(async (req, res) => {
    try {
      const r = await fetch(relayUrl + req.url, { method: req.method, headers: { 'if-none-match': req.headers['if-none-match'] || '' } });
      const headers = {};
      for (const h of ['content-type', 'cache-control', 'etag', 'content-security-policy', 'location']) {
        const v = r.headers.get(h);
        if (v) headers[h] = v;
      }
      res.writeHead(r.status, headers);
      res.end(Buffer.from(await r.arrayBuffer()));
    } catch (e) {
      res.writeHead(502);
      res.end(String(e));
    }
  });
  server.on('upgrade', (req, socket) => {
    const key = req.headers['sec-websocket-key'];
    if (!req.url.endsWith('/ws') || !key) {
      socket.destroy();
      return;
    }
    const accept = crypto.createHash('sha1').update(key + GUID).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    socket.setNoDelay(true);
    const conn = new Conn(socket, (text) => {
      try {
        ctl.received.push({ t: Date.now(), msg: JSON.parse(text) });
      } catch {
        ctl.received.push({ t: Date.now(), msg: { unparsable: text } });
      }
    });
    ctl.sockets.push(conn);
    if (ctl.onConnect) ctl.onConnect(conn, ctl.sockets.length);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  ctl.url = `http://127.0.0.1:${server.address().port}`;
  ctl.stop = () =>
    new Promise((resolve) => {
      for (const s of ctl.sockets) s.close(1001, 'test over');
      server.close(resolve);
      server.closeAllConnections();
    });
  return ctl;
}
