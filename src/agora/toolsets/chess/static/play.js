// The human's chess page: the table's state and the connection that keeps it. Reads the
// table and token from the page's URL, loads the state (GET state), keeps it live from the
// SSE stream and from every action's reply, sends the human's actions (POST, with the token)
// and wires the page's buttons. Loaded after view.js and moves.js: drawing is view.js's, the
// board's clicks and drags are moves.js's. The server decides everything (legal moves,
// turns, results); this script only shows its answers, never text as HTML.
"use strict";

(() => {
  const { $, el, base, showError } = chessView;
  const path = location.pathname.slice(location.pathname.startsWith(base) ? base.length : 0);
  const table = decodeURIComponent(path.split("/")[2] || "default");
  const token = new URLSearchParams(location.search).get("token") || "";
  const api = (action) => `${base}/play/${encodeURIComponent(table)}/${action}`;
  const withToken = (url) => (token ? `${url}?token=${encodeURIComponent(token)}` : url);
  let state = null;
  const moves = chessMoves.create({ state: () => state, move });

  // A fetch that fails never reached the server: say so in plain words (not the browser's
  // "TypeError: Failed to fetch"), and take the words back once the server answers again
  // (the stream reopens, or fresh state arrives).
  const UNREACHABLE = "The server cannot be reached; try again.";
  let unreachable = false;

  function reachable() {
    if (unreachable) showError("");
    unreachable = false;
  }

  // A refusal is about the turn it met: its words go once the turn changes (a move, a new
  // game, the game's end), so "it is the agent's turn" never stays beside "Your move.".
  // PENDING: the refused page is reading the turn the refusal met (nothing clears it yet).
  const PENDING = "pending";
  let errorTurn = null;
  const turnOf = (s) => `${s.gameNumber}:${s.history.length}:${s.phase}`;

  // Show a refusal, anchored to the table as the server has it now (read at once: the page's
  // own state may be a change behind, say another tab of the human's moved first). `sent` is
  // the state the page showed when it sent the action: the stream may have brought the other
  // tab's move while the request was on its way, so the state at the refusal cannot tell.
  async function refused(message, path, sent) {
    errorTurn = PENDING;
    showError(message);
    let fresh = null;
    try {
      const res = await fetch(withToken(api("state")));
      if (res.ok) fresh = await res.json();
    } catch (err) {
      fresh = null; // the stream brings the state once the server answers again
    }
    if (errorTurn !== PENDING) return; // another action (or its error) came since
    const now = fresh && (!state || fresh.version >= state.version) ? fresh : state;
    errorTurn = now ? turnOf(now) : null;
    const first = playedSince(sent, now);
    if (path === "move" && first && first.by === "human") {
      const number = `${first.moveNumber}${first.color === "white" ? "." : "…"}`;
      showError(`${message} Your move was not played: ${number} ${first.san} was played first,`
        + " from another page of yours.");
    }
    if (fresh) render(fresh);
  }

  // The first move played in `now` after the position `sent` showed (same game), or null.
  function playedSince(sent, now) {
    if (!sent || !now || now.gameNumber !== sent.gameNumber) return null;
    return now.history[sent.history.length] || null;
  }

  async function send(path, body) {
    const sent = state;
    showError("");
    errorTurn = null;
    unreachable = false;
    let res;
    try {
      res = await fetch(api(path), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token, ...body }),
      });
    } catch (err) {
      unreachable = true;
      showError(UNREACHABLE);
      return null;
    }
    const data = await res.json().catch(() => ({ error: res.statusText }));
    if (!res.ok) {
      await refused(data.error || res.statusText, path, sent);
      return null;
    }
    render(data);
    return data;
  }

  // The human's move, with the note typed for the agent (cleared once the move is played).
  async function move(from, to, promotion) {
    const body = { from, to };
    if (promotion) body.promotion = promotion;
    const note = $("note").value.trim();
    if (note) body.note = note;
    const done = await send("move", body);
    if (done) $("note").value = "";
    return done;
  }

  // The note's limit is the server's: 160 characters counted as Unicode code points, as the
  // agent's note is counted. An input's maxlength counts UTF-16 units instead (80 emoji), so
  // the page cuts the text itself; the server refuses a longer note all the same.
  function limitNote(event) {
    if (event.isComposing) return; // an input method's unfinished text is cut once it ends
    const box = $("note");
    const chars = Array.from(box.value);
    const max = Number(box.dataset.maxChars);
    if (chars.length > max) box.value = chars.slice(0, max).join("");
  }

  function render(next) {
    reachable();
    if (state && next.version < state.version) return; // a stale reply overtaken by the stream
    const newGame = state && next.gameNumber !== state.gameNumber;
    // "New token issued." (or "Copied.") is news until the next move or game, not for good.
    if (newGame || (state && next.history.length !== state.history.length)) {
      $("copied").textContent = "";
    }
    state = next;
    if (errorTurn && errorTurn !== PENDING && turnOf(next) !== errorTurn) {
      showError(""); // the refusal was about a turn that has passed
      errorTurn = null;
    }
    moves.update(state, newGame);
    chessView.render(state, moves.ui(), api("pgn"));
  }

  function connect() {
    const stream = new EventSource(withToken(api("events")));
    stream.addEventListener("state", (event) => render(JSON.parse(event.data)));
    stream.addEventListener("open", () => {
      reachable();
      $("live").textContent = "live";
      $("live").classList.add("on");
    });
    stream.addEventListener("error", () => {
      $("live").textContent = "reconnecting";
      $("live").classList.remove("on");
    });
  }

  async function copyAgentToken() {
    const text = state && state.agentToken;
    if (!text) return;
    let ok = false;
    try {
      await navigator.clipboard.writeText(text);
      ok = true;
    } catch (err) {
      const range = document.createRange(); // no clipboard API here: select it for Ctrl+C
      range.selectNodeContents($("agent-token"));
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    $("copied").textContent = ok ? "Copied." : "Selected: press Ctrl+C to copy.";
  }

  function wire() {
    $("human-white").addEventListener("click", () => send("side", { agentColor: "black" }));
    $("agent-white").addEventListener("click", () => send("side", { agentColor: "white" }));
    $("offer-draw").addEventListener("click", () => send("offer-draw", {}));
    $("accept-draw").addEventListener("click", () => send("accept-draw", {}));
    $("resign").addEventListener("click", () => {
      if (confirm("Resign this game?")) send("resign", {});
    });
    $("new-game").addEventListener("click", () => {
      if (state && (state.phase === "over" || confirm("Abandon this game and start a new one?"))) {
        send("new-game", {});
      }
    });
    $("note").addEventListener("input", limitNote);
    $("note").addEventListener("compositionend", limitNote);
    $("copy-agent-token").addEventListener("click", copyAgentToken);
    $("new-agent-token").addEventListener("click", async () => {
      if (!confirm("Issue a new agent token? The agent using the old one loses its seat.")) return;
      if (await send("agent-token", {})) $("copied").textContent = "New token issued.";
    });
    moves.wire();
  }

  // A page that cannot show the table shows only why and what to do: no empty board,
  // blank table name, "connecting" badge or endpoint fields.
  function showOnly(box) {
    box.hidden = false;
    document.querySelector("main").hidden = true;
    for (const id of ["table-label", "live"]) $(id).hidden = true;
  }

  function refuseToken(message) {
    const box = $("token-problem");
    box.replaceChildren(document.createTextNode(`${message} `));
    box.append(el("a", { href: api("").slice(0, -1) }, "Watch as a spectator"));
    $("status").textContent = "Not seated: the link's token is not this table's human token.";
    $("role").textContent = "not seated";
    showOnly(box);
  }

  function refuseTable(message) {
    const box = $("token-problem");
    box.replaceChildren(document.createTextNode(`${message} `));
    box.append(el("a", { href: `${base}/play` }, "Create a table"));
    $("role").hidden = true;
    showOnly(box);
  }

  async function start() {
    const res = await fetch(withToken(api("state")));
    if (!res.ok) {
      const data = await res.json().catch(() => ({}));
      if (res.status === 403) {
        refuseToken(data.error || "The token in this link is wrong.");
        return;
      }
      const text = res.status === 404 ? "There is no such table." : data.error || res.statusText;
      $("status").textContent = text;
      refuseTable(text);
      return;
    }
    render(await res.json());
    wire();
    connect();
  }

  start();
})();
