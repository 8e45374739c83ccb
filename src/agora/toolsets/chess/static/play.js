// The human's chess page: renders the table's state and sends the human's actions.
// State arrives from GET state, from every action's reply and live from the SSE stream;
// the server decides everything (legal moves, turns, results). All text from the server,
// the agent's notes included, is inserted with textContent, never as HTML.
"use strict";

(() => {
  const table = decodeURIComponent(location.pathname.split("/")[2] || "default");
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  const api = (path) => `/play/${encodeURIComponent(table)}/${path}`;
  const withToken = (url) => (token ? `${url}?token=${encodeURIComponent(token)}` : url);
  const files = "abcdefgh";
  let state = null;
  let selected = null;
  let pendingPromotion = null;

  function el(tag, attrs = {}, text = "") {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    if (text) node.textContent = text;
    return node;
  }

  function showError(message) {
    $("error").textContent = message || "";
  }

  async function send(path, body) {
    showError("");
    try {
      const res = await fetch(api(path), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ token, ...body }),
      });
      const data = await res.json().catch(() => ({ error: res.statusText }));
      if (!res.ok) {
        showError(data.error || res.statusText);
        return null;
      }
      render(data);
      return data;
    } catch (err) {
      showError(String(err));
      return null;
    }
  }

  function isMyTurn() {
    return state && state.role === "human" && state.phase === "human_turn";
  }

  function movesFrom(square) {
    return isMyTurn() ? state.legalMoves.filter((m) => m.from === square) : [];
  }

  function squareOrder() {
    const flipped = state && state.humanColor === "black";
    const squares = [];
    for (let row = 0; row < 8; row++) {
      for (let col = 0; col < 8; col++) {
        const rank = flipped ? row + 1 : 8 - row;
        const file = flipped ? files[7 - col] : files[col];
        squares.push(file + rank);
      }
    }
    return squares;
  }

  function renderBoard() {
    const board = $("board");
    board.replaceChildren();
    const targets = new Set(selected ? movesFrom(selected).map((m) => m.to) : []);
    const last = state.lastMove;
    for (const square of squareOrder()) {
      const fileIndex = files.indexOf(square[0]);
      const rank = Number(square[1]);
      const light = (fileIndex + rank) % 2 === 0;
      const button = el("button", {
        type: "button",
        class: `square ${light ? "light" : "dark"}`,
        "data-square": square,
        "aria-label": square,
      });
      const piece = state.board[square];
      if (piece) button.append(el("img", { src: `/play/static/${piece}.svg`, alt: piece }));
      if (last && (last.from === square || last.to === square)) button.classList.add("last");
      if (state.checkSquare === square) button.classList.add("check");
      if (selected === square) button.classList.add("selected");
      if (targets.has(square)) button.classList.add("target");
      if (movesFrom(square).length) button.classList.add("movable");
      button.addEventListener("click", () => clickSquare(square));
      board.append(button);
    }
  }

  function clickSquare(square) {
    if (!isMyTurn()) return;
    if (selected) {
      const options = movesFrom(selected).filter((m) => m.to === square);
      if (options.length > 1) {
        pendingPromotion = { from: selected, to: square };
        showPromotion(true);
        return;
      }
      if (options.length === 1) {
        play(options[0].from, options[0].to, null);
        return;
      }
    }
    selected = movesFrom(square).length ? square : null;
    renderBoard();
  }

  function showPromotion(show) {
    const box = $("promotion");
    box.hidden = !show;
    if (!show) {
      pendingPromotion = null;
      return;
    }
    const color = state.humanColor === "black" ? "b" : "w";
    for (const button of box.querySelectorAll("[data-promotion]")) {
      const kind = button.dataset.promotion;
      const img = el("img", { src: `/play/static/${color}${kind.toUpperCase()}.svg`, alt: kind });
      button.replaceChildren(img);
    }
  }

  async function play(from, to, promotion) {
    const body = { from, to };
    if (promotion) body.promotion = promotion;
    const note = $("note").value.trim();
    if (note) body.note = note;
    selected = null;
    showPromotion(false);
    const done = await send("move", body);
    if (done) $("note").value = "";
    else if (state) renderBoard();
  }

  function renderLists() {
    const trace = $("trace");
    trace.replaceChildren();
    for (const move of state.history) {
      if (move.by !== "agent" || !move.note) continue;
      const item = el("li");
      item.append(el("span", { class: "san" }, `${move.moveNumber}${move.color === "white" ? "." : "…"} ${move.san}`));
      item.append(document.createTextNode(move.note));
      trace.append(item);
    }
    const moves = $("moves");
    moves.replaceChildren();
    for (const move of state.history) {
      const who = move.by === "agent" ? "agent" : state.role === "human" ? "you" : "human";
      const label = `${move.moveNumber}${move.color === "white" ? "." : "…"} ${move.san} (${who})`;
      const item = el("li", {}, label);
      if (move.by === "human" && move.note) item.append(el("em", {}, ` — ${move.note}`));
      moves.append(item);
    }
  }

  function renderAgent() {
    $("mcp-http").textContent = state.agent.mcpHttp;
    $("mcp-ws").textContent = state.agent.mcpWebsocket;
    const config = { mcpServers: { "agora-chess": { type: "http", url: state.agent.mcpHttp } } };
    $("mcp-config").textContent = JSON.stringify(config, null, 2);
    $("agent-presence").textContent = state.agentPresent
      ? "An agent has joined this table."
      : "No agent has joined this table yet.";
  }

  function renderStatus() {
    let text = state.status;
    if (state.drawOffer === "agent") text += " The agent offers a draw.";
    if (state.drawOffer === "human") text += " You offered a draw.";
    $("status").textContent = text;
    const human = state.role === "human";
    const playing = state.phase === "human_turn" || state.phase === "agent_turn";
    $("role").textContent = human ? "you play" + (state.humanColor ? ` ${state.humanColor}` : "") : "spectator";
    $("side-choice").hidden = !(human && state.phase === "side_choice");
    $("controls").hidden = !human;
    $("offer-draw").disabled = !playing || state.drawOffer === "human";
    $("resign").disabled = !playing;
    $("accept-draw").hidden = !(playing && state.drawOffer === "agent");
  }

  function render(next) {
    if (state && next.version < state.version) return; // a stale reply overtaken by the stream
    if (state && next.gameNumber !== state.gameNumber) selected = null;
    state = next;
    if (selected && !movesFrom(selected).length) selected = null;
    if (!isMyTurn()) showPromotion(false);
    $("table-name").textContent = state.table;
    renderStatus();
    renderBoard();
    renderLists();
    renderAgent();
  }

  function connect() {
    const stream = new EventSource(withToken(api("events")));
    stream.addEventListener("state", (event) => render(JSON.parse(event.data)));
    stream.addEventListener("open", () => {
      $("live").textContent = "live";
      $("live").classList.add("on");
    });
    stream.addEventListener("error", () => {
      $("live").textContent = "reconnecting";
      $("live").classList.remove("on");
    });
  }

  async function createTable() {
    const name = $("new-table-name").value.trim();
    const res = await fetch("/play/tables", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(name ? { name } : {}),
    });
    const data = await res.json().catch(() => ({ error: res.statusText }));
    const out = $("new-table");
    out.replaceChildren();
    if (!res.ok) {
      out.textContent = data.error || res.statusText;
      return;
    }
    const link = el("a", { href: data.humanUrl }, `Play at table ${data.table}`);
    out.append(link, el("br"), document.createTextNode(`Agent endpoint: ${data.agent.mcpHttp}`));
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
    $("create-table").addEventListener("click", createTable);
    $("promotion-cancel").addEventListener("click", () => {
      showPromotion(false);
      selected = null;
      renderBoard();
    });
    for (const button of document.querySelectorAll("#promotion [data-promotion]")) {
      const kind = button.dataset.promotion;
      button.addEventListener("click", () => {
        if (pendingPromotion) play(pendingPromotion.from, pendingPromotion.to, kind);
      });
    }
  }

  async function start() {
    const res = await fetch(withToken(api("state")));
    if (!res.ok) {
      $("status").textContent = res.status === 404 ? "There is no such table." : res.statusText;
      return;
    }
    render(await res.json());
    wire();
    connect();
  }

  start();
})();
