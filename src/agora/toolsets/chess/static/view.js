// The chess page's view: draws the table's state (the board, the status line, the players,
// the moves, both players' notes, the agent's endpoints) into the page. Loaded first; play.js
// and moves.js call it. It keeps no state of its own (the board's selection is handed in),
// listens to no event and sends nothing. All text from the server, the agent's notes
// included, is inserted with textContent, never as HTML.
"use strict";

const chessView = (() => {
  const $ = (id) => document.getElementById(id);
  const files = "abcdefgh";
  // The path prefix of the server's public URL (behind a proxy at a sub-path), "" if none.
  const base = document.querySelector('meta[name="agora-base"]')?.content ?? "";

  function el(tag, attrs = {}, text = "") {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
    if (text) node.textContent = text;
    return node;
  }

  function showError(message) {
    $("error").textContent = message || "";
  }

  function isMyTurn(state) {
    return state && state.role === "human" && state.phase === "human_turn";
  }

  function movesFrom(state, square) {
    return isMyTurn(state) ? state.legalMoves.filter((m) => m.from === square) : [];
  }

  // The colour drawn at the bottom: the human's own on their page; White for a spectator,
  // as boards are shown, whichever side the human took.
  function bottomColor(state) {
    return state && state.role === "human" && state.humanColor === "black" ? "black" : "white";
  }

  function flipped(state) {
    return bottomColor(state) === "black";
  }

  function squareOrder(state) {
    const squares = [];
    for (let row = 0; row < 8; row++) {
      for (let col = 0; col < 8; col++) {
        const rank = flipped(state) ? row + 1 : 8 - row;
        const file = flipped(state) ? files[7 - col] : files[col];
        squares.push(file + rank);
      }
    }
    return squares;
  }

  const PIECE_NAMES = { P: "pawn", N: "knight", B: "bishop", R: "rook", Q: "queen", K: "king" };

  // What a screen reader says of a square: "e4, white pawn", "e5, empty, a legal move".
  function squareLabel(square, piece, target, check) {
    const held = piece ? `${piece[0] === "w" ? "white" : "black"} ${PIECE_NAMES[piece[1]]}` : "empty";
    return `${square}, ${held}${check ? ", in check" : ""}${target ? ", a legal move" : ""}`;
  }

  // The coordinates in the board's frame, outside its squares: the ranks beside the rows, top
  // to bottom, and the files under the columns, left to right, as the board is drawn (flipped
  // for Black). Each cell's label names its square: these are for the eye only.
  function renderCoordinates(order) {
    const coord = (kind, text) => el("span", { class: `coord ${kind}`, "aria-hidden": "true" }, text);
    const rows = order.filter((_, i) => i % 8 === 0); // each row's first square
    $("ranks").replaceChildren(...rows.map((square) => coord("rank", square[1])));
    $("files").replaceChildren(...order.slice(56).map((square) => coord("file", square[0])));
  }

  // ui: {selected, dragging, focus}: the square picked, the square whose piece is being
  // dragged, and the keyboard's square: the board's one tab stop (the arrows move it), which
  // keeps the focus when the board is drawn again.
  function renderBoard(state, ui) {
    const board = $("board");
    const hadFocus = board.contains(document.activeElement);
    const order = squareOrder(state);
    const focus = ui.focus || ui.selected || order[56];
    board.replaceChildren();
    let row = null; // the grid's rows, for screen readers; the layout ignores them
    const targets = new Set(ui.selected ? movesFrom(state, ui.selected).map((m) => m.to) : []);
    const last = state.lastMove;
    renderCoordinates(order);
    for (const square of order) {
      const fileIndex = files.indexOf(square[0]);
      const rank = Number(square[1]);
      const light = (fileIndex + rank) % 2 === 0;
      const piece = state.board[square];
      const button = el("button", {
        type: "button",
        role: "gridcell",
        class: `square ${light ? "light" : "dark"}`,
        "data-square": square,
        "aria-label": squareLabel(square, piece, targets.has(square), state.checkSquare === square),
        "aria-selected": ui.selected === square ? "true" : "false",
        tabindex: square === focus ? "0" : "-1",
      });
      if (piece) {
        // Named by the square's label: the picture itself says nothing more.
        button.append(el("img", { src: `${base}/play/static/${piece}.svg`, alt: "", draggable: "false" }));
      }
      if (last && (last.from === square || last.to === square)) button.classList.add("last");
      if (state.checkSquare === square) button.classList.add("check");
      if (ui.selected === square) button.classList.add("selected");
      if (targets.has(square)) button.classList.add("target");
      if (targets.has(square) && piece) button.classList.add("occupied");
      if (movesFrom(state, square).length) button.classList.add("movable");
      if (ui.dragging === square) button.classList.add("dragging");
      if (!row || row.childElementCount === 8) {
        row = el("div", { role: "row", class: "rank-row", "aria-label": `rank ${square[1]}` });
        board.append(row);
      }
      row.append(button);
    }
    if (hadFocus) board.querySelector(`[data-square="${focus}"]`).focus();
  }

  // The promotion chooser: shown with the human's four pieces, or hidden.
  function renderPromotion(state, show) {
    const box = $("promotion");
    box.hidden = !show;
    if (!show) return;
    const color = state.humanColor === "black" ? "b" : "w";
    for (const button of box.querySelectorAll("[data-promotion]")) {
      const kind = button.dataset.promotion;
      const img = el("img", { src: `${base}/play/static/${color}${kind.toUpperCase()}.svg`, alt: kind });
      button.replaceChildren(img);
    }
  }

  const EARLIER_GAMES = 5;

  function who(state, move) {
    if (move.by === "agent") return "agent";
    return state.role === "human" ? "you" : "human";
  }

  function renderLists(state, pgnUrl) {
    const trace = $("trace");
    trace.replaceChildren();
    // Every note, the human's too (typed with a move, it shows nowhere else), by its writer.
    for (const move of state.history) {
      if (!move.note) continue;
      const item = el("li", { class: move.by });
      const label = `${move.moveNumber}${move.color === "white" ? "." : "…"} ${move.san}`;
      item.append(el("span", { class: "san" }, label));
      item.append(el("span", { class: "who" }, `${who(state, move)}:`));
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
      attrs.title = move.note ? `${who(state, move)}: \u2068${move.note}\u2069` : who(state, move);
      row.append(el("span", attrs, move.san));
    }
    moves.scrollTop = moves.scrollHeight;
    // No empty box before the first move: a line says there is none yet.
    moves.hidden = state.history.length === 0;
    $("no-moves").hidden = state.history.length > 0;
    $("pgn").setAttribute("href", pgnUrl);
    // A game with no move and no result yet has nothing to download (the last one is under
    // "Earlier games").
    $("pgn").hidden = state.history.length === 0 && state.phase !== "over";
    // The table's earlier games stay downloadable after "New game": the last few, newest
    // first, and the older ones behind "and N older" (kept open while the page redraws).
    const earlier = $("earlier-games");
    const wasOpen = Boolean(earlier.querySelector("details")?.open);
    earlier.replaceChildren();
    const gameLink = (n) => el("a", { href: `${pgnUrl}?game=${n}`, download: "" }, `game ${n}`);
    const first = Math.max(1, state.gameNumber - EARLIER_GAMES);
    for (let n = state.gameNumber - 1; n >= first; n--) {
      earlier.append(earlier.childElementCount ? ", " : "Earlier games (PGN): ", gameLink(n));
    }
    const older = first - 1; // games 1 to first - 1
    if (older > 0) {
      const more = el("details");
      more.open = wasOpen;
      more.append(el("summary", {}, `and ${older} older`));
      for (let n = older; n >= 1; n--) {
        if (n < older) more.append(", ");
        more.append(gameLink(n));
      }
      earlier.append(more);
    }
    earlier.hidden = state.gameNumber <= 1;
  }

  // The agent's newest note, with the move it came with, under the status line: the Notes
  // list grows below the moves (below the board on a phone), out of view in a long game.
  function renderLastNote(state) {
    const box = $("last-note");
    const move = state.history.findLast((m) => m.by === "agent" && m.note);
    box.hidden = !move;
    if (!move) {
      box.replaceChildren();
      return;
    }
    const label = `${move.moveNumber}${move.color === "white" ? "." : "…"} ${move.san}`;
    box.replaceChildren(
      el("span", { class: "who" }, `The agent's note on ${label}:`),
      el("bdi", { class: "note" }, move.note),
    );
  }

  function renderPlayers(state) {
    const human = state.role === "human";
    const humanColor = state.humanColor;
    const agentColor = state.agentColor;
    const bottom = bottomColor(state);
    const top = bottom === "white" ? "black" : "white";
    for (const [id, color] of [["player-top", top], ["player-bottom", bottom]]) {
      const box = $(id);
      box.replaceChildren();
      box.append(el("span", { class: `dot ${color}` }));
      let label = `${color === "white" ? "White" : "Black"}: not chosen yet`;
      if (agentColor === color) label = `Agent (${color})`;
      if (humanColor === color) label = `${human ? "You" : "Human"} (${color})`;
      box.append(el("span", {}, label));
      const toMove = state.phase !== "over" && state.phase !== "side_choice";
      if (toMove && state.turn === color) box.append(el("span", { class: "turn" }, "to move"));
    }
  }

  function renderAgent(state) {
    const human = state.role === "human";
    $("mcp-http").textContent = state.agent.mcpHttp;
    $("mcp-ws").textContent = state.agent.mcpWebsocket;
    const config = { mcpServers: { "agora-chess": { type: "http", url: state.agent.mcpHttp } } };
    $("mcp-config").textContent = JSON.stringify(config, null, 2);
    $("agent-seat").hidden = !human;
    // The human's own link is their seat: the one to share is the spectator's.
    $("share").hidden = !human;
    $("spectator-link").setAttribute("href", state.spectatorUrl);
    $("spectator-link").textContent = state.spectatorUrl;
    $("watch-only").hidden = human;
    $("agent-token").textContent = state.agentToken || "";
    $("agent-presence").textContent = !state.agentPresent
      ? ABSENCE[state.agentAbsence] || ABSENCE.stale
      : state.agentShared
        ? "More than one connection moved for the agent in the last 2 minutes (one moved while" +
          " another had chosen a move): a second agent with this token, or one agent whose" +
          " client uses several connections. If a second agent holds it, click \"New agent" +
          " token\" and give the new one to the agent that should play."
        : "An agent has joined this table.";
  }

  // Why no agent is at the table, in words true of what the server knows: it keeps presence
  // in memory only, so after a restart it cannot tell when the agent last called.
  const ABSENCE = {
    token: "No agent is at this table: none has called since the agent token was issued.",
    restart: "No agent is at this table: none has called since the server started.",
    stale: "No agent is at this table: none has called in the last 2 minutes.",
  };

  // The status line, its score ("(1/2-1/2)") kept on one line: a narrow page would break it
  // at a hyphen or slash otherwise.
  function showStatus(text) {
    const score = /\((?:1-0|0-1|1\/2-1\/2)\)/.exec(text);
    if (!score) {
      $("status").textContent = text;
      return;
    }
    const before = text.slice(0, score.index);
    const after = text.slice(score.index + score[0].length);
    $("status").replaceChildren(before, el("span", { class: "score" }, score[0]), after);
  }

  function renderStatus(state) {
    const human = state.role === "human";
    const last = state.lastMove;
    let text = state.status;
    // The status is the page's live region: it says the agent's move, not only whose turn.
    if (last && last.by === "agent" && state.phase !== "side_choice") {
      const number = `${last.moveNumber}${last.color === "white" ? "." : "…"}`;
      text = `The agent played ${number} ${last.san}. ${text}`;
    }
    if (state.drawOffer === "agent") {
      // The human answers by moving: no button declines (a move does, as over the board).
      text += human ? " The agent offers a draw: accept it, or play your move to decline it."
        : " The agent offers a draw.";
    }
    if (state.humanDeclined) {
      text += human ? " You declined the agent's draw offer." : " The human declined the agent's draw offer.";
    }
    const yours = human ? "your" : "the human's";
    if (state.drawOffer === "human") {
      text += human ? " You offered a draw." : " The human offers a draw.";
    }
    // The agent moved before it was shown the offer: the move did not decline it.
    if (state.drawOfferUnseen) {
      text += state.drawOfferSightUnknown
        ? " The server restarted and cannot tell whether the agent saw the offer: it still stands."
        : " The agent moved before it saw the offer: it still stands.";
    }
    // The agent's move declined the human's offer (the agent is told the converse itself).
    if (state.drawDeclined) text += ` The agent declined ${yours} draw offer.`;
    showStatus(text);
    const playing = state.phase === "human_turn" || state.phase === "agent_turn";
    $("role").textContent = human
      ? (state.humanColor ? `you play ${state.humanColor}` : "you: choose a side")
      : "spectator";
    $("side-choice").hidden = !(human && state.phase === "side_choice");
    $("controls").hidden = !human;
    $("offer-draw").disabled = !playing || state.drawOffer === "human";
    // While the agent's offer stands, offering would agree the draw: only Accept is shown.
    $("offer-draw").hidden = playing && state.drawOffer === "agent";
    $("resign").disabled = !playing;
    $("new-game").disabled = state.phase === "side_choice"; // nothing to abandon yet
    $("accept-draw").hidden = !(playing && state.drawOffer === "agent");
  }

  // The tab's title says whose turn it is, so a human in another tab sees when to come back.
  function turnTitle(state) {
    const human = state.role === "human";
    const titles = {
      side_choice: human ? "Choose your side" : "Choosing sides",
      human_turn: human ? "Your move" : "The human's move",
      agent_turn: "The agent's move",
      over: "Game over",
    };
    return `${titles[state.phase] || "Loading"} — agora chess`;
  }

  // The whole table: ui is the board's selection (see renderBoard), pgnUrl the PGN link.
  function render(state, ui, pgnUrl) {
    $("table-name").textContent = state.table;
    document.title = turnTitle(state);
    renderStatus(state);
    renderLastNote(state);
    renderPlayers(state);
    renderBoard(state, ui);
    renderLists(state, pgnUrl);
    renderAgent(state);
  }

  return {
    $, el, base, showError, isMyTurn, movesFrom, squareOrder, renderBoard, renderPromotion, render,
  };
})();
