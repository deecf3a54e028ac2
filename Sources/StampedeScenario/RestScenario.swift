/// The ETag-polling REST client (the JSONSession model): what each simulated client polls, with
/// what credentials, how often, and how it reads each answer.
public struct RestSpec: Sendable, Equatable {
    /// Sent as `Authorization: Bearer <token>`; resolved at the start of a run, never logged.
    public var token: TokenSource?
    /// Time between two polls of one resource by one client (until a processor changes it).
    public var intervalSeconds: Double
    /// Keep-alive connections per client; polls of different resources can overlap up to this.
    public var poolSize: Int
    /// From a request being written to the first byte of its answer, and to its last byte.
    public var firstByteTimeoutSeconds: Double
    public var responseTimeoutSeconds: Double
    /// Largest response (head and body) accepted; a bigger one fails the connection.
    public var maxResponseBytes: Int
    /// Redirects followed per poll (301, 302, 303, 307, 308 to the same server); 0 = none, and
    /// a 3xx answer goes to the processors like any other status.
    public var maxRedirects: Int
    /// Where the server says when the resource last changed, for the staleness metric.
    public var staleness: StalenessSource?
    public var resources: [RestResource]
    /// With `target: embedded`: how the built-in REST target behaves.
    public var embedded = EmbeddedRestTarget()

    public init(token: TokenSource? = nil, intervalSeconds: Double = 1, poolSize: Int = 1, firstByteTimeoutSeconds: Double = 10,
                responseTimeoutSeconds: Double = 30, maxResponseBytes: Int = 1 << 20, maxRedirects: Int = 0,
                staleness: StalenessSource? = nil, resources: [RestResource] = []) {
        self.token = token; self.intervalSeconds = intervalSeconds; self.poolSize = poolSize
        self.firstByteTimeoutSeconds = firstByteTimeoutSeconds; self.responseTimeoutSeconds = responseTimeoutSeconds
        self.maxResponseBytes = maxResponseBytes; self.maxRedirects = maxRedirects; self.staleness = staleness
        self.resources = resources
    }
}

/// One polled path and the processors its answers are offered to.
public struct RestResource: Sendable, Equatable {
    /// Origin-form path and query, starting with `/`, appended to the target's base path.
    public var path: String
    /// Offered in order to each processor whose statuses include the answer's; the first that
    /// handles it wins. None: the answer is counted unprocessed.
    public var processors: [RestProcessor]
    public init(path: String, processors: [RestProcessor] = RestProcessor.defaults) { self.path = path; self.processors = processors }
}

/// What an expected status means to the client, and what it does about it.
public struct RestProcessor: Sendable, Equatable {
    public var statuses: [Int]
    public var meaning: Meaning
    /// `changed` only: the JSON object's top-level keys that must be present; a body without
    /// them (or not a JSON object) is passed on to the next matching processor.
    public var requiredFields: [String]
    /// A new poll interval for this resource from now on (nil = keep it).
    public var newIntervalSeconds: Double?
    /// Stop polling this resource.
    public var stops: Bool

    public enum Meaning: String, Sendable, Equatable, CaseIterable {
        /// A new representation: its ETag is remembered (and its body checked).
        case changed
        /// 304 Not Modified: nothing new, and cheap.
        case unchanged
        /// 429 (or 503): wait for `Retry-After` (or one interval), then poll on.
        case rateLimited = "rate_limited"
        /// 401 or 403: the client's credentials are refused; the client stops.
        case authFailure = "auth_failure"
    }

    public init(statuses: [Int], meaning: Meaning, requiredFields: [String] = [], newIntervalSeconds: Double? = nil, stops: Bool = false) {
        self.statuses = statuses; self.meaning = meaning; self.requiredFields = requiredFields
        self.newIntervalSeconds = newIntervalSeconds; self.stops = stops
    }

    /// Used when a resource lists none: 200 changed, 304 unchanged, 429 rate limited, 401 and
    /// 403 stop the client.
    public static let defaults: [RestProcessor] = [
        RestProcessor(statuses: [200], meaning: .changed),
        RestProcessor(statuses: [304], meaning: .unchanged),
        RestProcessor(statuses: [429], meaning: .rateLimited),
        RestProcessor(statuses: [401, 403], meaning: .authFailure),
    ]
}

/// Where a response says when its resource changed: a header or a top-level JSON field, holding
/// Unix epoch seconds (a decimal number, e.g. 1763779200.123456).
public enum StalenessSource: Sendable, Equatable {
    case header(String)
    case field(String)
}

/// The embedded REST target's behaviour (`rest.embedded`), for `target: embedded`.
public struct EmbeddedRestTarget: Sendable, Equatable {
    /// Changes per second of every resource (0: never).
    public var changeRate: Double = 1
    /// 200 answers allowed per second, whole server (304s do not count); nil: no limit.
    public var rateLimit: Int? = nil
    /// About how large a 200's JSON body is, bytes.
    public var bodySize: Int = 256
    /// Frame bodies with Transfer-Encoding: chunked.
    public var chunked: Bool = false
    /// The token the target accepts; nil: the clients' own `rest.token` (none: no auth).
    public var token: TokenSource? = nil
    public init() {}
}
