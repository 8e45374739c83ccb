// The human's hand on the chess board: picks a move by click (piece, then target) or by
// dragging the piece, both with pointer events, and asks which piece a pawn promotes to.
// Loaded after view.js, before play.js. It holds only the board's selection; the table's
// state is play.js's (read through page.state()), and a chosen move goes to page.move(),
// which sends it. Only legal moves the server listed can be picked; it sends nothing itself.
"use strict";

const chessMoves = (() => {
  const { $, el, isMyTurn, movesFrom, renderBoard, renderPromotion } = chessView;

  // page: {state() -> the table's state, move(from, to, promotion) -> promise of success}.
  function create(page) {
    let selected = null;
    let pendingPromotion = null;
    let drag = null; // {from, pointerId, x, y, moved, ghost}

    function ui() {
      return { selected, dragging: drag && drag.moved ? drag.from : null };
    }

    function redraw() {
      renderBoard(page.state(), ui());
    }

    function showPromotion(show) {
      renderPromotion(page.state(), show);
      if (!show) pendingPromotion = null;
    }

    function squareAt(x, y) {
      const hit = document.elementFromPoint(x, y);
      const square = hit && hit.closest ? hit.closest(".square") : null;
      return square ? square.dataset.square : null;
    }

    function tryMove(from, to) {
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

    function pointerDown(event) {
      if (!isMyTurn(page.state()) || event.button > 0) return;
      const square = squareAt(event.clientX, event.clientY);
      if (!square) return;
      event.preventDefault();
      if (selected && selected !== square && tryMove(selected, square)) return;
      selected = movesFrom(page.state(), square).length ? square : null;
      if (selected) {
        drag = { from: square, pointerId: event.pointerId, x: event.clientX, y: event.clientY };
        drag.moved = false;
      }
      redraw();
    }

    function pointerMove(event) {
      if (!drag || event.pointerId !== drag.pointerId) return;
      if (!drag.moved) {
        if (Math.hypot(event.clientX - drag.x, event.clientY - drag.y) < 4) return;
        drag.moved = true;
        const piece = page.state().board[drag.from];
        drag.ghost = el("img", { id: "ghost", src: `/play/static/${piece}.svg` });
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
      const { from, moved, ghost } = drag;
      drag = null;
      if (ghost) ghost.remove();
      if (!moved) return; // a click: the piece stays selected for its target click
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
      document.addEventListener("pointermove", pointerMove);
      document.addEventListener("pointerup", pointerUp);
      document.addEventListener("pointercancel", pointerUp);
    }

    return { ui, update, wire };
  }

  return { create };
})();
