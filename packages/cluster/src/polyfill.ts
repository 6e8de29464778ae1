/** `Promise.withResolvers` for Node 20 (libp2p 3 calls it; Node ships it from 22), imported before anything from libp2p. */

if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(): PromiseWithResolvers<T> {
      let resolve!: PromiseWithResolvers<T>['resolve']
      let reject!: PromiseWithResolvers<T>['reject']
      const promise = new Promise<T>((resolvePromise, rejectPromise) => {
        resolve = resolvePromise
        reject = rejectPromise
      })
      return { promise, resolve, reject }
    },
  })
}

export {}
