// The human's hand on the chess board: picks a move by click (piece, then target), by
// dragging the piece, both with pointer events, or by keyboard (the arrows move between
// squares, Enter or Space picks the piece and then its target, Escape drops the pick), and
// asks which piece a pawn promotes to.
// Loaded after view.js, before play.js. It holds only the board's selection; the table's
// state is play.js's (read through page.state()), and a chosen move goes to page.move(),
// which sends it. Only legal moves the server listed can be picked; it sends nothing itself.
"use strict";

const chessMoves = (() => {
  const { $, el, base, isMyTurn, movesFrom, squareOrder, renderBoard, renderPromotion } = chessView;
  // Arrow key -> [rows, columns] on the board as drawn (flipped for Black).
  const STEPS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

  // The king put on its own rook castles that side, as on lichess and chess.com: the legal
  // castling move (the king two squares over, "O-O" or "O-O-O") toward that rook, if any.
  function castlingOnto(state, from, to) {
    const mine = state && state.humanColor === "black" ? "b" : "w";
    if (!state || state.board[from] !== `${mine}K` || state.board[to] !== `${mine}R`) return null;
    const side = to[0] > from[0] ? "O-O" : "O-O-O";
    return movesFrom(state, from).find((m) => /^O-O(-O)?/.exec(m.san)?.[0] === side) || null;
  }

  // page: {state() -> the table's state, move(from, to, promotion) -> promise of success}.
  function create(page) {
    let selected = null;
    let pendingPromotion = null;
    let focus = null; // the keyboard's square
    let drag = null; // {from, pointerId, x, y, moved, ghost}

    function ui() {
      return { selected, focus, dragging: drag && drag.moved ? drag.from : null };
    }

    function redraw() {
      renderBoard(page.state(), ui());
    }

    function showPromotion(show) {
      const box = $("promotion");
      const hadFocus = box.contains(document.activeElement);
      renderPromotion(page.state(), show);
      if (show) box.querySelector("[data-promotion]").focus(); // the queen, for the keyboard
      if (!show) pendingPromotion = null;
      if (!show && hadFocus && focus) {
        const square = document.querySelector(`[data-square="${focus}"]`);
        if (square) square.focus(); // back to the board, not to the page's top
      }
    }

    function squareAt(x, y) {
      const hit = document.elementFromPoint(x, y);
      const square = hit && hit.closest ? hit.closest(".square") : null;
      return square ? square.dataset.square : null;
    }

    function tryMove(from, to) {
      const castle = castlingOnto(page.state(), from, to);
      if (castle) {
        play(castle.from, castle.to, null);
        return true;
      }
      const options = movesFrom(page.state(), from).filter((m) => m.to === to);
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

    async function play(from, to, promotion) {
      selected = null;
      showPromotion(false);
      const done = await page.move(from, to, promotion);
      if (!done && page.state()) redraw();
    }

    // A click or Enter on ``square``: play the selected piece there, or pick it up (a
    // second time: put it down). A pick drops a promotion chooser left open.
    // (A pointer's press keeps its piece picked: it may be the start of a drag; its release
    // puts the piece down if it was a click, see pointerUp.)
    function pick(square, toggle = true) {
      if (pendingPromotion) showPromotion(false);
      if (selected && selected !== square && tryMove(selected, square)) return true;
      const again = toggle && selected === square;
      selected = !again && movesFrom(page.state(), square).length ? square : null;
      return false;
    }

    // Escape: put the picked piece down and close the promotion chooser.
    function drop() {
      selected = null;
      showPromotion(false);
      redraw();
    }

    // Escape anywhere on the page drops a pick, however it was made and wherever the focus
    // went since (a click into the note field, then Escape, drops it too).
    function pageKeyDown(event) {
      if (event.key === "Escape" && (selected || pendingPromotion) && page.state()) drop();
    }

    function keyDown(event) {
      const square = event.target.closest ? event.target.closest(".square") : null;
      if (!square || event.altKey || event.ctrlKey || event.metaKey) return;
      const name = square.dataset.square;
      focus = name;
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        if (!(isMyTurn(page.state()) && pick(name))) redraw();
      } else if (event.key === "Escape") {
        drop();
      } else if (STEPS[event.key]) {
        event.preventDefault();
        const order = squareOrder(page.state());
        const index = order.indexOf(name);
        const row = Math.floor(index / 8) + STEPS[event.key][0];
        const col = (index % 8) + STEPS[event.key][1];
        if (row < 0 || row > 7 || col < 0 || col > 7) return;
        focus = order[row * 8 + col];
        redraw();
      }
    }

    function pointerDown(event) {
      if (!isMyTurn(page.state()) || event.button > 0) return;
      const square = squareAt(event.clientX, event.clientY);
      if (!square) return;
      // No native focus (it would come on the release, after a drag began), so the square
      // is focused here: the keyboard carries on from the pick (arrows, Enter, Escape).
      event.preventDefault();
      focus = square;
      const node = document.querySelector(`[data-square="${square}"]`);
      if (node) node.focus({ preventScroll: true });
      const wasPicked = selected === square;
      if (pick(square, false)) return;
      if (selected) {
        drag = { from: square, pointerId: event.pointerId, x: event.clientX, y: event.clientY };
        drag.moved = false;
        drag.wasPicked = wasPicked;
      }
      redraw();
    }

    function pointerMove(event) {
      if (!drag || event.pointerId !== drag.pointerId) return;
      if (!drag.moved) {
        if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < 4) return;
        drag.moved = true;
        const piece = page.state().board[drag.from];
        drag.ghost = el("img", { id: "ghost", src: `${base}/play/static/${piece}.svg` });
        document.body.append(drag.ghost);
        redraw();
      }
      drag.ghost.style.left = `${event.clientX}px`;
      drag.ghost.style.top = `${event.clientY}px`;
      const over = squareAt(event.clientX, event.clientY);
      for (const node of document.querySelectorAll(".square.hover")) {
        node.classList.remove("hover");
      }
      const target = over && document.querySelector(`[data-square="${over}"].target`);
      if (target) target.classList.add("hover");
    }

    function pointerUp(event) {
      if (!drag || event.pointerId !== drag.pointerId) return;
      const { from, moved, ghost, wasPicked } = drag;
      drag = null;
      if (ghost) ghost.remove();
      if (!moved) {
        // A click: a piece just picked stays picked for its target; a second click on it
        // puts it down.
        if (wasPicked) {
          selected = null;
          redraw();
        }
        return;
      }
      const to = squareAt(event.clientX, event.clientY);
      if (to && to !== from && tryMove(from, to)) return;
      redraw();
    }

    // A new state arrived (newGame: another game than the last state's): drop a selection
    // it no longer allows, and the promotion chooser when it is not the human's turn.
    function update(state, newGame) {
      if (newGame) selected = null;
      if (selected && !movesFrom(state, selected).length) selected = null;
      if (!isMyTurn(state)) showPromotion(false);
    }

    function wire() {
      $("promotion-cancel").addEventListener("click", () => {
        showPromotion(false);
        selected = null;
        redraw();
      });
      for (const button of document.querySelectorAll("#promotion [data-promotion]")) {
        const kind = button.dataset.promotion;
        button.addEventListener("click", () => {
          if (pendingPromotion) play(pendingPromotion.from, pendingPromotion.to, kind);
        });
      }
      $("board").addEventListener("pointerdown", pointerDown);
      $("board").addEventListener("keydown", keyDown);
      // The keyboard's square follows the focus however it moved (a click when it is not
      // the human's turn, a screen reader's cursor), so a redraw keeps it where it is.
      $("board").addEventListener("focusin", (event) => {
        const square = event.target.closest ? event.target.closest(".square") : null;
        if (square) focus = square.dataset.square;
      });
      document.addEventListener("keydown", pageKeyDown);
      document.addEventListener("pointermove", pointerMove);
      document.addEventListener("pointerup", pointerUp);
      document.addEventListener("pointercancel", pointerUp);
    }

    return { ui, update, wire };
  }

  return { create };
})();
