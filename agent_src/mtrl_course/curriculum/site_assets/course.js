// The course site's behaviour (`make site`): a cue above whatever still scrolls sideways (tables,
// outputs and code cells whose lines are longer than the column), and click-to-enlarge for
// figures drawn wider than the column. No request leaves the page.
(function () {
  "use strict";

  // .highlight-ipynb is a code cell's input (mkdocs-jupyter scrolls it with overflow: auto);
  // "pre > code" is a code block written in markdown (the README, the docs), which the theme
  // scrolls on the code element itself.
  var SCROLLERS = ".jp-OutputArea-output, .md-typeset__scrollwrap, .md-typeset table:not([class]), .jp-RenderedText pre, .highlight-ipynb, pre > code";
  var CUE = "Wider than the column: scroll sideways for the rest \u2192";

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

  function openLightbox(img) {
    var box = document.createElement("div");
    box.className = "mtrl-lightbox";
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-label", "Enlarged figure");
    var note = document.createElement("p");
    note.textContent = "Click the figure for its full size; click outside it or press Escape to close.";
    var big = document.createElement("img");
    big.src = img.currentSrc || img.src;
    big.alt = img.alt || "";
    big.className = "mtrl-fit";
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

  function makeZoomable(img) {
    if (img.classList.contains("mtrl-zoomable") || img.closest(".mtrl-lightbox")) return;
    if (!(img.naturalWidth > img.clientWidth * 1.1)) return;
    img.classList.add("mtrl-zoomable");
    img.tabIndex = 0;
    img.title = "Click to enlarge";
    img.addEventListener("click", function () { openLightbox(img); });
    img.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        openLightbox(img);
      }
    });
    var hint = document.createElement("span");
    hint.className = "mtrl-zoom-hint";
    hint.textContent = "Shown at " + Math.round((100 * img.clientWidth) / img.naturalWidth) + "% of its size: click the figure to enlarge it.";
    img.insertAdjacentElement("afterend", hint);
  }

  function zoomables() {
    document.querySelectorAll("article img").forEach(function (img) {
      if (img.complete) makeZoomable(img);
      else img.addEventListener("load", function () { makeZoomable(img); }, { once: true });
    });
  }

  function run() {
    markOverflow();
    zoomables();
  }

  var timer = null;
  window.addEventListener("resize", function () {
    clearTimeout(timer);
    timer = setTimeout(markOverflow, 150);
  });
  if (document.readyState === "complete") run();
  else window.addEventListener("load", run);
})();
