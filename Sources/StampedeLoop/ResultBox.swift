#if canImport(Glibc)
import Glibc
#endif

/// Hands one value from a loop thread to a thread waiting for it (the engine asking a loop for
/// a snapshot). Used at interval boundaries, never per message.
public final class ResultBox<T: Sendable>: @unchecked Sendable {
    var mutex = pthread_mutex_t()
    var condition = pthread_cond_t()
    var value: T?

    public init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }
    deinit {
        pthread_cond_destroy(&condition)
        pthread_mutex_destroy(&mutex)
    }

    public func put(_ v: T) {
        pthread_mutex_lock(&mutex)
        value = v
        pthread_cond_broadcast(&condition)
        pthread_mutex_unlock(&mutex)
    }

    /// Waits for the value.
    public func take() -> T {
        pthread_mutex_lock(&mutex)
        while value == nil { pthread_cond_wait(&condition, &mutex) }
        let v = value!
        pthread_mutex_unlock(&mutex)
        return v
    }
}

extension EventLoop {
    /// Runs `body` on the loop thread and waits for its result (any thread but the loop's own).
    public func submitAndWait<T: Sendable>(_ body: @escaping @Sendable (EventLoop) -> T) -> T {
        let box = ResultBox<T>()
        execute { loop in box.put(body(loop)) }
        return box.take()
    }
}
