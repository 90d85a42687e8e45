// The little of autocannon's and node-oidc-provider's APIs the benchmarks use (neither ships types).
declare module 'autocannon' {
  namespace autocannon {
    interface Request {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      /** `context` is per connection, kept across its chained requests; a falsy return restarts the chain. */
      // biome-ignore lint/suspicious/noExplicitAny: the context is whatever the caller keeps in it
      setupRequest?: (request: Request, context: any) => Request;
      /** Called with each response of this request. */
      onResponse?: (
        status: number,
        body: string,
        // biome-ignore lint/suspicious/noExplicitAny: as above
        context: any,
        headers: Record<string, string | undefined>,
      ) => void;
    }
    interface Histogram {
      average: number;
      mean: number;
      p50: number;
      p99: number;
      max: number;
    }
    interface Result {
      requests: Histogram & { total: number };
      latency: Histogram;
      duration: number;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
    }
    interface Options extends Request {
      url: string;
      connections?: number;
      duration?: number;
      requests?: Request[];
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>;
  export = autocannon;
}

declare module 'oidc-provider' {
  // biome-ignore lint/suspicious/noExplicitAny: an untyped third-party module, used by the benchmark only
  const Provider: any;
  export default Provider;
}
