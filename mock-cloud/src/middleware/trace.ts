/**
 * Continues the caller's trace in the cloud (W3C Trace Context). The FIRST middleware of the app:
 *
 * - extracts the caller's context from its `traceparent` header, with a W3C propagator of its own (so it
 *   works when no global propagator is registered, i.e. when the cloud itself does not trace);
 * - starts a SERVER span, a child of the caller's span, and runs the rest of the pipeline inside it: with
 *   the AsyncLocalStorage context manager registered, the context follows express's async chain (the body
 *   parser, async guards, handlers) down to the repository, whose write transactions are child spans;
 * - names the span `METHOD /route/:template` once the response closes, with the HTTP attributes of the
 *   semantic conventions, and an error status for a 5xx or an abandoned request (4xx is the caller's
 *   problem, not the server's: no error);
 * - tells who the request belongs to: `res.locals.traceId` (the request log records it) and the
 *   `traceresponse` header (W3C Trace Context Level 2), with the cloud's span id when the cloud traces,
 *   else the caller's.
 *
 * With tracing off the tracer is the API's no-op one: no span is recorded, but a caller's trace id still
 * reaches the request log and the `traceresponse` header, so a caller that traces can still correlate.
 */
import {
  context,
  defaultTextMapGetter,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanContext,
  type SpanStatus,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { Request, RequestHandler, Response } from "express";
import { cloudTracer } from "../tracer.ts";
import { answeredStatus, routeOf } from "./observe.ts";

/** What this middleware leaves in `res.locals` for the later ones. */
export interface TraceLocals {
  /** The request's trace id (32 lowercase hex), when one is known. */
  traceId?: string;
}

const propagator = new W3CTraceContextPropagator();

/** Middleware tracing each request; register it first. */
export function traceRequests(): RequestHandler {
  return (req, res, next) => {
    const caller = propagator.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter);
    const userAgent = req.get("user-agent");
    const span = cloudTracer().startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: {
          "http.request.method": req.method,
          "url.path": req.path,
          ...(userAgent === undefined ? {} : { "user_agent.original": userAgent }),
        },
      },
      caller,
    );
    const known = knownTrace(span, caller);
    if (known) {
      (res.locals as TraceLocals).traceId = known.traceId;
      res.setHeader("traceresponse", traceresponse(known));
    }
    res.once("close", () => endServerSpan(span, req, res));
    context.with(trace.setSpan(caller, span), () => next());
  };
}

/**
 * The status of a SERVER span for an answer: an error for a 5xx, and for 0 (the client went away before an
 * answer); unset otherwise (a 4xx is the client's mistake, not the server's).
 */
export function serverSpanStatus(status: number): SpanStatus {
  if (status === 0) return { code: SpanStatusCode.ERROR, message: "the client went away before an answer" };
  if (status >= 500) return { code: SpanStatusCode.ERROR, message: `answered HTTP ${status}` };
  return { code: SpanStatusCode.UNSET };
}

/**
 * The trace a request is known to be part of: the span's own context when it is valid (the cloud traces;
 * the no-op tracer of a cloud that does not hands back the caller's), else the caller's, else none.
 */
function knownTrace(span: Span, caller: Context): SpanContext | undefined {
  const own = span.spanContext();
  if (isSpanContextValid(own)) return own;
  const theirs = trace.getSpanContext(caller);
  return theirs && isSpanContextValid(theirs) ? theirs : undefined;
}

/** `00-<trace id>-<span id>-<flags>`: the `traceresponse` header of W3C Trace Context Level 2. */
function traceresponse(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

/** Names the span after the route that matched, records the answer, and ends it. */
function endServerSpan(span: Span, req: Request, res: Response): void {
  const status = answeredStatus(res);
  const route = routeOf(req);
  if (route !== "unmatched") {
    // No route, no template: the semantic conventions then name the span by the method alone.
    span.updateName(`${req.method} ${route}`);
    span.setAttribute("http.route", route);
  }
  if (status > 0) span.setAttribute("http.response.status_code", status);
  if (status >= 500) span.setAttribute("error.type", String(status));
  span.setStatus(serverSpanStatus(status));
  span.end();
}
