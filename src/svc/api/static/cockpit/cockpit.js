// svc cockpit: the small behaviours of svc's pages, loaded as a file (the pages' Content-Security-Policy
// allows no inline script). Every page works without it; with it:
// - a live page (<main data-svc-live>) asks its own URL for its <main> again with X-Svc-Fragment: main and
//   If-None-Match every two seconds while it is visible; the server answers 304 while nothing it shows moved;
// - a page that follows executions (data-svc-follow="<id>" or "*") listens to /events and asks at once;
// - a page that shows the plan or the mesh (data-svc-topics="plan" or "mesh") listens to that topic of
//   /events and asks at once on each `plan.changed` or `mesh.changed`; the poll goes on as the fallback;
// - a query form (form[data-svc-query]) runs its GET route and shows the answer in place;
// - a cancel button (button[data-svc-cancel]) asks the server to cancel that execution.
(function () {
  "use strict";

  var POLL_MS = 2000;
  var RETRY_MS = 1000;
  var MAX_RETRY_MS = 30000;

  function main() {
    return document.querySelector("main[data-svc-live]");
  }

  // -- live pages ------------------------------------------------------------------------------------

  var inFlight = false;
  var again = false;

  function refresh() {
    var element = main();
    if (!element) {
      return;
    }
    if (inFlight) {
      again = true;
      return;
    }
    inFlight = true;
    var headers = { "X-Svc-Fragment": "main" };
    var version = element.getAttribute("data-svc-version");
    if (version) {
      headers["If-None-Match"] = '"' + version + '"';
    }
    fetch(window.location.href, { headers: headers, cache: "no-store", credentials: "same-origin" })
      .then(function (response) {
        if (response.status !== 200) {
          return null;
        }
        var tag = (response.headers.get("ETag") || "").replace(/"/g, "");
        return response.text().then(function (body) {
          replace(element, body, tag);
        });
      })
      .catch(function () {})
      .then(function () {
        inFlight = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  function replace(element, body, version) {
    var active = document.activeElement;
    var focusId = active && element.contains(active) && active.id ? active.id : null;
    element.innerHTML = body;
    if (version) {
      element.setAttribute("data-svc-version", version);
    }
    if (focusId) {
      var again = document.getElementById(focusId);
      if (again) {
        again.focus();
      }
    }
    element.dispatchEvent(new CustomEvent("svc:updated", { bubbles: true }));
  }

  function startPolling() {
    if (!main()) {
      return;
    }
    window.setInterval(function () {
      if (!document.hidden) {
        refresh();
      }
    }, POLL_MS);
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden) {
        refresh();
      }
    });
  }

  // -- following executions over /events -------------------------------------------------------------

  // The frame a message of /events carries, or null when it is not JSON.
  function frameOf(message) {
    try {
      return JSON.parse(message.data);
    } catch (e) {
      return null;
    }
  }

  function follow(target) {
    var url = new URL("/events", window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    if (target !== "*") {
      url.searchParams.set("execution", target);
    }
    var socket;
    try {
      socket = new WebSocket(url.toString());
    } catch (e) {
      return;
    }
    var finished = false;
    socket.addEventListener("message", function (message) {
      var frame = frameOf(message);
      if (frame === null || frame.type === "stream.ready") {
        return;
      }
      refresh();
      if (target !== "*" && /^execution\.(completed|failed|cancelled)$/.test(frame.type || "")) {
        finished = true;
      }
    });
    socket.addEventListener("close", function () {
      if (!finished) {
        window.setTimeout(function () {
          follow(target);
        }, RETRY_MS);
      }
    });
  }

  // -- following the plan and the mesh over /events --------------------------------------------------

  // Reconnects from the last sequence seen of each topic, so a change made while the connection was down
  // is replayed; a replay the server cannot complete (`truncated`) or a lagged queue asks at once instead.
  // A channel that refuses (a server without topics) is tried again less and less often, up to 30 s apart.
  function followTopics(names, cursors, delay) {
    var url = new URL("/events", window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    names.forEach(function (name) {
      url.searchParams.append("topic", name);
      if (cursors[name] !== undefined) {
        url.searchParams.set(name + "_after", String(cursors[name]));
      }
    });
    var socket;
    try {
      socket = new WebSocket(url.toString());
    } catch (e) {
      return;
    }
    var opened = false;
    socket.addEventListener("open", function () {
      opened = true;
    });
    socket.addEventListener("message", function (message) {
      var frame = frameOf(message);
      if (frame === null) {
        return;
      }
      if (frame.type === "stream.ready") {
        var stale = false;
        ((frame.data && frame.data.topics) || []).forEach(function (topic) {
          if (topic.truncated) {
            stale = true;
          }
          if (cursors[topic.topic] === undefined || topic.truncated) {
            cursors[topic.topic] = topic.last_sequence;
          }
        });
        if (stale) {
          refresh();
        }
        return;
      }
      if (frame.type === "stream.lagged") {
        refresh();
        return;
      }
      if (frame.topic && typeof frame.sequence === "number") {
        cursors[frame.topic] = frame.sequence;
        refresh();
      }
    });
    socket.addEventListener("close", function () {
      var next = opened ? RETRY_MS : Math.min(delay * 2, MAX_RETRY_MS);
      window.setTimeout(function () {
        followTopics(names, cursors, next);
      }, opened ? RETRY_MS : delay);
    });
  }

  // -- query forms -----------------------------------------------------------------------------------

  function onQuery(event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-svc-query")) {
      return;
    }
    event.preventDefault();
    var params = new URLSearchParams();
    new FormData(form).forEach(function (value, key) {
      if (typeof value === "string" && value !== "") {
        params.append(key, value);
      }
    });
    var action = form.getAttribute("action");
    var query = params.toString();
    var status = form.querySelector("[data-svc-status]");
    var answer = form.querySelector("[data-svc-answer]");
    if (status) {
      status.textContent = "Asking…";
    }
    fetch(action + (query ? "?" + query : ""), { headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        return response.text().then(function (text) {
          var shown = text;
          try {
            shown = JSON.stringify(JSON.parse(text), null, 2);
          } catch (e) {}
          if (status) {
            status.textContent = response.status + " " + (response.ok ? "OK" : "refused");
            status.setAttribute("data-status", response.ok ? "succeeded" : "failed");
          }
          if (answer) {
            answer.textContent = shown;
            answer.hidden = false;
          }
        });
      })
      .catch(function (error) {
        if (status) {
          status.textContent = "The server could not be reached: " + error;
          status.setAttribute("data-status", "failed");
        }
      });
  }

  // -- cancel buttons --------------------------------------------------------------------------------

  function onClick(event) {
    var target = event.target;
    var button = target instanceof Element ? target.closest("button[data-svc-cancel]") : null;
    if (!button) {
      return;
    }
    event.preventDefault();
    button.disabled = true;
    var note = document.querySelector("[data-svc-cancel-note]");
    fetch("/api/v1/executions/cancel", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({ id: button.getAttribute("data-svc-cancel") }),
      cache: "no-store",
    })
      .then(function (response) {
        return response.json().then(function (body) {
          if (note) {
            note.textContent = response.ok
              ? "Cancel asked: " + body.outcome + "."
              : "Cancel refused: " + (body.error ? body.error.message : response.status);
          }
          refresh();
        });
      })
      .catch(function (error) {
        button.disabled = false;
        if (note) {
          note.textContent = "The server could not be reached: " + error;
        }
      });
  }

  document.addEventListener("submit", onQuery);
  document.addEventListener("click", onClick);
  document.addEventListener("DOMContentLoaded", function () {
    startPolling();
    var element = main();
    var target = element ? element.getAttribute("data-svc-follow") : null;
    if (target) {
      follow(target);
    }
    var topics = element ? element.getAttribute("data-svc-topics") : null;
    if (topics) {
      followTopics(topics.split(/\s+/).filter(Boolean), {}, RETRY_MS);
    }
  });
})();
