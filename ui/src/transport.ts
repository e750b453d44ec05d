// One transport layer, two transports: inside the desktop app (Tauri) the
// page talks over IPC; in a browser, over the WebSocket of `robobrain serve`,
// reconnecting with `since=<last seq>` so nothing seen is sent twice.

import type { ServerMessage } from "./protocol";

export interface Transport {
  /** Sends an operator line (a command as JSON, or words to say). */
  send(line: string): void;
  /** Which transport this is. */
  readonly kind: "tauri" | "websocket";
}

export interface Handlers {
  message(m: ServerMessage): void;
  status(connected: boolean, detail: string): void;
  lastSeq(): number;
  /** The thread the last seq belongs to. */
  thread(): string;
}

interface TauriGlobal {
  core: { invoke(cmd: string, args?: Record<string, unknown>): Promise<unknown> };
  event: { listen(name: string, cb: (e: { payload: unknown }) => void): Promise<unknown> };
}

/** The desktop app's IPC: commands `hello` and `send`, events `robobrain://message`. */
function tauri(t: TauriGlobal, h: Handlers): Transport {
  void t.event.listen("robobrain://message", (e) => h.message(e.payload as ServerMessage));
  void t.core
    .invoke("hello")
    .then((msgs) => {
      for (const m of msgs as ServerMessage[]) h.message(m);
      h.status(true, "desktop app");
    })
    .catch((e) => h.status(false, String(e)));
  return {
    kind: "tauri",
    send(line) {
      t.core.invoke("send_line", { line }).catch((e) => h.message({ type: "error", code: "not_sent", message: String(e) }));
    },
  };
}

/** `ws(s)://<this host>/ws`, keeping the page's `token` and `role` parameters. */
function websocket(h: Handlers): Transport {
  const page = new URL(window.location.href);
  let socket: WebSocket | undefined;
  let delay = 250;
  const open = () => {
    const url = new URL("/ws", page);
    url.protocol = page.protocol === "https:" ? "wss:" : "ws:";
    for (const key of ["token", "role"]) {
      const v = page.searchParams.get(key);
      if (v) url.searchParams.set(key, v);
    }
    const seq = h.lastSeq();
    if (seq > 0) {
      url.searchParams.set("since", String(seq));
      url.searchParams.set("thread", h.thread());
    }
    const ws = new WebSocket(url);
    socket = ws;
    ws.onopen = () => {
      delay = 250;
      h.status(true, url.host);
    };
    ws.onmessage = (m) => h.message(JSON.parse(String(m.data)) as ServerMessage);
    ws.onclose = () => {
      h.status(false, `reconnecting to ${url.host}…`);
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 4000);
    };
  };
  open();
  return {
    kind: "websocket",
    send(line) {
      if (socket?.readyState === WebSocket.OPEN) socket.send(line);
      else h.message({ type: "error", code: "not_sent", message: "not connected" });
    },
  };
}

/** The transport for where the page runs. */
export function connect(h: Handlers): Transport {
  const t = (window as unknown as { __TAURI__?: TauriGlobal }).__TAURI__;
  return t ? tauri(t, h) : websocket(h);
}
