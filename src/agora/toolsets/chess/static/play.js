// The human's chess page: renders the table's state and sends the human's actions.
// State arrives from GET state, from every action's reply and live from the SSE stream;
// the server decides everything (legal moves, turns, results). All text from the server,
// the agent's notes included, is inserted with textContent, never as HTML. Moves are made
// by click (piece, then target) or by dragging the piece, both with pointer events.
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
  let drag = null; // {from, pointerId, ghost, moved}

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

  function flipped() {
    return Boolean(state && state.humanColor === "black");
  }

  function squareOrder() {
    const squares = [];
    for (let row = 0; row < 8; row++) {
      for (let col = 0; col < 8; col++) {
        const rank = flipped() ? row + 1 : 8 - row;
        const file = flipped() ? files[7 - col] : files[col];
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
    const bottomRank = flipped() ? "8" : "1";
    const leftFile = flipped() ? "h" : "a";
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
      if (square[0] === leftFile) button.append(el("span", { class: "coord rank" }, square[1]));
      if (square[1] === bottomRank) button.append(el("span", { class: "coord file" }, square[0]));
      const piece = state.board[square];
      if (piece) {
        button.append(
          el("img", { src: `/play/static/${piece}.svg`, alt: piece, draggable: "false" }),
        );
      }
      if (last && (last.from === square || last.to === square)) button.classList.add("last");
      if (state.checkSquare === square) button.classList.add("check");
      if (selected === square) button.classList.add("selected");
      if (targets.has(square)) button.classList.add("target");
      if (targets.has(square) && piece) button.classList.add("occupied");
      if (movesFrom(square).length) button.classList.add("movable");
      if (drag && drag.from === square && drag.moved) button.classList.add("dragging");
      board.append(button);
    }
  }

  function squareAt(x, y) {
    const hit = document.elementFromPoint(x, y);
    const square = hit && hit.closest ? hit.closest(".square") : null;
    return square ? square.dataset.square : null;
  }

  function tryMove(from, to) {
    const options = movesFrom(from).filter((m) => m.to === to);
    if (options.length > 1) {
      pendingPromotion = { from, to };
      showPromotion(true);
      return true;
    }
    if (options.length === 1) {
      play(options[0].from, options[0].to, null);
      return true;
    }
    return false;
  }

  function pointerDown(event) {
    if (!isMyTurn() || event.button > 0) return;
    const square = squareAt(event.clientX, event.clientY);
    if (!square) return;
    event.preventDefault();
    if (selected && selected !== square && tryMove(selected, square)) return;
    selected = movesFrom(square).length ? square : null;
    if (selected) {
      drag = { from: square, pointerId: event.pointerId, x: event.clientX, y: event.clientY };
      drag.moved = false;
    }
    renderBoard();
  }

  function pointerMove(event) {
    if (!drag || event.pointerId !== drag.pointerId) return;
    if (!drag.moved) {
      if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < 4) return;
      drag.moved = true;
      drag.ghost = el("img", { id: "ghost", src: `/play/static/${state.board[drag.from]}.svg` });
      document.body.append(drag.ghost);
      renderBoard();
    }
    drag.ghost.style.left = `${event.clientX}px`;
    drag.ghost.style.top = `${event.clientY}px`;
    const over = squareAt(event.clientX, event.clientY);
    for (const node of document.querySelectorAll(".square.hover")) node.classList.remove("hover");
    const target = over && document.querySelector(`[data-square="${over}"].target`);
    if (target) target.classList.add("hover");
  }

  function pointerUp(event) {
    if (!drag || event.pointerId !== drag.pointerId) return;
    const { from, moved, ghost } = drag;
    drag = null;
    if (ghost) ghost.remove();
    if (!moved) return; // a click: the piece stays selected for its target click
    const to = squareAt(event.clientX, event.clientY);
    if (to && to !== from && tryMove(from, to)) return;
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

  function who(move) {
    if (move.by === "agent") return "agent";
    return state.role === "human" ? "you" : "human";
  }

  function renderLists() {
    const trace = $("trace");
    trace.replaceChildren();
    for (const move of state.history) {
      if (move.by !== "agent" || !move.note) continue;
      const item = el("li");
      const label = `${move.moveNumber}${move.color === "white" ? "." : "…"} ${move.san}`;
      item.append(el("span", { class: "san" }, label));
      // <bdi>: a right-to-left override in the note stays inside it.
      item.append(el("bdi", { class: "note" }, move.note));
      trace.append(item);
    }
    const moves = $("moves");
    moves.replaceChildren();
    let row = null;
    for (const move of state.history) {
      if (move.color === "white" || row === null) {
        row = el("li");
        row.append(el("span", { class: "num" }, `${move.moveNumber}.`));
        if (move.color === "black") row.append(el("span", { class: "san" }, "…"));
        moves.append(row);
      }
      const last = state.lastMove && state.lastMove.ply === move.ply ? " last" : "";
      const attrs = { class: `san ${move.by}${last}`, "data-ply": String(move.ply) };
      // FSI ... PDI isolate the note in the tooltip, as <bdi> does on the page.
      attrs.title = move.note ? `${who(move)}: \u2068${move.note}\u2069` : who(move);
      row.append(el("span", attrs, move.san));
    }
    moves.scrollTop = moves.scrollHeight;
    $("pgn").setAttribute("href", api("pgn"));
  }

  function renderPlayers() {
    const human = state.role === "human";
    const humanColor = state.humanColor;
    const agentColor = state.agentColor;
    const bottom = humanColor || "white";
    const top = bottom === "white" ? "black" : "white";
    for (const [id, color] of [["player-top", top], ["player-bottom", bottom]]) {
      const box = $(id);
      box.replaceChildren();
      box.append(el("span", { class: `dot ${color}` }));
      let name = color === "white" ? "White" : "Black";
      if (agentColor === color) name = "Agent";
      if (humanColor === color) name = human ? "You" : "Human";
      box.append(el("span", {}, `${name} (${color})`));
      const toMove = state.phase !== "over" && state.phase !== "side_choice";
      if (toMove && state.turn === color) box.append(el("span", { class: "turn" }, "to move"));
    }
  }

  function renderAgent() {
    const human = state.role === "human";
    $("mcp-http").textContent = state.agent.mcpHttp;
    $("mcp-ws").textContent = state.agent.mcpWebsocket;
    const config = { mcpServers: { "agora-chess": { type: "http", url: state.agent.mcpHttp } } };
    $("mcp-config").textContent = JSON.stringify(config, null, 2);
    $("agent-seat").hidden = !human;
    $("watch-only").hidden = human;
    $("agent-token").textContent = state.agentToken || "";
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
    $("role").textContent = human
      ? "you play" + (state.humanColor ? ` ${state.humanColor}` : "")
      : "spectator";
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
    renderPlayers();
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
    $("copy-agent-token").addEventListener("click", copyAgentToken);
    $("new-agent-token").addEventListener("click", async () => {
      if (!confirm("Issue a new agent token? The agent using the old one loses its seat.")) return;
      if (await send("agent-token", {})) $("copied").textContent = "New token issued.";
    });
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
    $("board").addEventListener("pointerdown", pointerDown);
    document.addEventListener("pointermove", pointerMove);
    document.addEventListener("pointerup", pointerUp);
    document.addEventListener("pointercancel", pointerUp);
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
    $("status").textContent = "Not seated: the link's token is wrong.";
    $("role").textContent = "not seated";
    showOnly(box);
  }

  function refuseTable(message) {
    const box = $("token-problem");
    box.replaceChildren(document.createTextNode(`${message} `));
    box.append(el("a", { href: "/play" }, "Create a table"));
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
