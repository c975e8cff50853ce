// Search for a site opened from disk (file://), loaded in <head> before the theme's bundle.
//
// mkdocs-material's search runs in a Web Worker, and a browser refuses `new Worker(...)` for a
// file:// page; the search index itself is read from search/search_index.js (written by the
// build) on file://. Here, on file:// only, `Worker` becomes a same-origin hidden iframe that
// runs the worker's script with the worker's globals (`postMessage`, `addEventListener`).
// Served over http(s), nothing changes. The search worker needs no `importScripts` for an
// English site; a worker that calls it gets a clear error.
(function () {
  "use strict";
  if (location.protocol !== "file:" || typeof window.Worker === "undefined") return;

  function FileWorker(url) {
    var target = document.createElement("span"); // an EventTarget every browser can dispatch on
    var self = this;
    var queue = [];
    var ready = false;
    var frame = document.createElement("iframe");
    frame.hidden = true;
    frame.setAttribute("aria-hidden", "true");
    frame.tabIndex = -1;
    (document.body || document.documentElement).appendChild(frame);
    var scope = frame.contentWindow;

    this.onmessage = null;
    this.onerror = null;
    this.addEventListener = target.addEventListener.bind(target);
    this.removeEventListener = target.removeEventListener.bind(target);
    this.dispatchEvent = target.dispatchEvent.bind(target);

    function deliver(name, init) {
      var event = new MessageEvent(name, init);
      target.dispatchEvent(event);
      var handler = name === "message" ? self.onmessage : self.onerror;
      if (typeof handler === "function") handler.call(self, event);
    }

    scope.postMessage = function (data) {
      var copy = structuredClone(data);
      setTimeout(function () { deliver("message", { data: copy }); }, 0);
    };
    scope.importScripts = function () {
      throw new Error("importScripts is not available to a worker of a site opened from disk");
    };
    scope.addEventListener("error", function (event) {
      deliver("error", { data: event.message });
    });

    function post(data) {
      scope.dispatchEvent(new scope.MessageEvent("message", { data: structuredClone(data) }));
    }
    this.postMessage = function (data) {
      if (ready) setTimeout(function () { post(data); }, 0);
      else queue.push(data);
    };
    this.terminate = function () {
      frame.remove();
    };

    var script = scope.document.createElement("script");
    script.src = new URL(url, location.href).href;
    script.onload = function () {
      ready = true;
      queue.splice(0).forEach(post);
    };
    script.onerror = function () {
      deliver("error", { data: "could not load " + url });
    };
    scope.document.head.appendChild(script);
  }

  window.Worker = FileWorker;
})();
