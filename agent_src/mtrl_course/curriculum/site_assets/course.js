// The course site's behaviour (`make site`): a cue above whatever still scrolls sideways (tables,
// outputs and code cells whose lines are longer than the column), figures kept at a readable size
// where the layout has its sidebars, and click-to-enlarge (tap-to-open on a phone) for figures
// shown smaller than they were drawn. No request leaves the page.
(function () {
  "use strict";

  // .highlight-ipynb is a code cell's input (mkdocs-jupyter scrolls it with overflow: auto);
  // "pre > code" is a code block written in markdown (the README, the docs), which the theme
  // scrolls on the code element itself.
  var SCROLLERS = ".jp-OutputArea-output, .md-typeset__scrollwrap, .md-typeset table:not([class]), .jp-RenderedText pre, .highlight-ipynb, pre > code";
  var CUE = "Wider than the column: scroll sideways for the rest \u2192";
  // site.FIGURE_MIN_SCALE (tests/test_site.py checks that the two agree): at this share of its
  // size a figure's smallest type (7 pt at 110 dpi) is still 9 px. Where the theme shows its
  // sidebars (76.25em and up, the desktop layout) no figure is shown smaller; a figure that would
  // be scrolls sideways in its output box, with the cue. On narrower screens figures fit the
  // column and open at full size on a tap.
  var FIGURE_MIN_SCALE = 0.85;
  var DESKTOP = window.matchMedia("(min-width: 76.25em)");

  function markOverflow() {
    document.querySelectorAll("article " + SCROLLERS.split(", ").join(", article ")).forEach(function (box) {
      var overflows = box.scrollWidth > box.clientWidth + 1;
      // Above the box, or above its output row (a flex row: a cue beside the box would squeeze it),
      // or above the pre of a markdown code block (a cue inside the pre would scroll with it).
      var anchor = box.closest(".jp-OutputArea-child") || (box.matches("pre > code") ? box.parentElement : box);
      var cue = anchor.previousElementSibling;
      var hasCue = cue && cue.classList.contains("mtrl-scroll-cue");
      if (overflows) {
        box.setAttribute("data-overflows", "");
        if (!hasCue) {
          cue = document.createElement("span");
          cue.className = "mtrl-scroll-cue";
          cue.textContent = CUE;
          anchor.parentNode.insertBefore(cue, anchor);
        }
      } else {
        box.removeAttribute("data-overflows");
        if (hasCue) cue.remove();
      }
    });
  }

  // The width a figure is shown at on the desktop layout: its own size if the column holds it,
  // else the column's width, but never less than FIGURE_MIN_SCALE of its size.
  function readableFigures() {
    document.querySelectorAll("article .jp-RenderedImage img").forEach(function (img) {
      if (!img.naturalWidth) return;
      img.classList.remove("mtrl-readable");
      img.style.width = "";
      if (!DESKTOP.matches) return;
      var column = img.parentElement.clientWidth;
      var least = Math.ceil(img.naturalWidth * FIGURE_MIN_SCALE);
      if (column < least) {
        img.classList.add("mtrl-readable");
        img.style.width = least + "px";
      }
    });
  }

  function openLightbox(img) {
    var box = document.createElement("div");
    box.className = "mtrl-lightbox";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Enlarged figure");
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt || "";
    // Fitted to the window when that is readable (a desktop), else at full size, to scroll (a phone).
    var fits = (window.innerWidth - 32) / img.naturalWidth >= FIGURE_MIN_SCALE;
    var note = document.createElement("p");
    note.textContent = fits
      ? "Click the figure for its full size; click outside it or press Escape to close."
      : "Full size: scroll to see all of it; tap the figure to fit it to the screen, outside it to close.";
    if (fits) big.className = "mtrl-fit";
    big.addEventListener("click", function (event) {
      event.stopPropagation();
      big.classList.toggle("mtrl-fit");
    });
    function close() {
      box.remove();
      document.removeEventListener("keydown", onKey);
      img.focus();
    }
    function onKey(event) {
      if (event.key === "Escape") close();
    }
    box.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    box.appendChild(note);
    box.appendChild(big);
    document.body.appendChild(box);
  }

  // A figure shown at less than 90% of its size opens larger on a click or a tap; the line under
  // it says at what share it is shown.
  function makeZoomable(img) {
    if (img.closest(".mtrl-lightbox")) return;
    var hint = img.nextElementSibling;
    if (!(hint && hint.classList.contains("mtrl-zoom-hint"))) hint = null;
    var small = img.naturalWidth > img.clientWidth * 1.1;
    if (!small) {
      if (hint) hint.hidden = true;
      return;
    }
    if (!img.classList.contains("mtrl-zoomable")) {
      img.classList.add("mtrl-zoomable");
      img.tabIndex = 0;
      img.title = "Click to enlarge";
      img.addEventListener("click", function () {
        if (img.classList.contains("mtrl-zoomable")) openLightbox(img);
      });
      img.addEventListener("keydown", function (event) {
        if (img.classList.contains("mtrl-zoomable") && (event.key === "Enter" || event.key === " ")) {
          event.preventDefault();
          openLightbox(img);
        }
      });
    }
    if (!hint) {
      hint = document.createElement("span");
      hint.className = "mtrl-zoom-hint";
      img.insertAdjacentElement("afterend", hint);
    }
    hint.hidden = false;
    hint.textContent = "Shown at " + Math.round((100 * img.clientWidth) / img.naturalWidth) + "% of its size: "
      + (DESKTOP.matches ? "click the figure to enlarge it." : "tap the figure to open it at full size.");
  }

  function zoomables() {
    document.querySelectorAll("article img").forEach(function (img) {
      if (img.complete && img.naturalWidth) makeZoomable(img);
      else img.addEventListener("load", layout, { once: true });
    });
  }

  function layout() {
    readableFigures();
    markOverflow();
    zoomables();
  }

  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(layout, 150);
  });
  if (document.readyState === "complete") layout();
  else window.addEventListener("load", layout);
})();
