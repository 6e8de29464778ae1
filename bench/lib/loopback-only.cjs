'use strict';
/**
 * Preload (`node --require ./loopback-only.cjs ...`) that keeps a server which
 * has no host option on the loopback interface: every `listen()` of a TCP
 * server is rewritten to bind 127.0.0.1. Used for @portkey-ai/gateway, whose
 * start-server.js calls `serve({ port })` and so would listen on all
 * interfaces. http.Server and https.Server inherit this method from net.Server.
 */
const net = require('node:net');

const LOOPBACK = '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value));
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const [first] = args;
  if (typeof first === 'function') return originalListen.call(this, 0, LOOPBACK, first);
  if (first !== null && typeof first === 'object') {
    // listen(options[, callback]); a handle, fd or unix path is no interface
    if ('path' in first || 'handle' in first || '_handle' in first || 'fd' in first) {
      return originalListen.apply(this, args);
    }
    return originalListen.call(this, { ...first, host: LOOPBACK }, ...args.slice(1));
  }
  if (first === undefined || first === null || isPort(first)) {
    // listen([port[, host[, backlog]]][, callback]): drop the host, pin ours
    const rest = args.slice(1);
    if (rest.length > 0 && (typeof rest[0] === 'string' || rest[0] === undefined || rest[0] === null)) rest.shift();
    return originalListen.call(this, first ?? 0, LOOPBACK, ...rest);
  }
  // listen(path): a unix socket
  return originalListen.apply(this, args);
};
