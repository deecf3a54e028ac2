import CStampedeLinux
#if canImport(Glibc)
import Glibc
#endif

/// Blocking reads of a child process's output pipe that retry EINTR.
///
/// Foundation's `FileHandle.availableData` and `readDataToEndOfFile()` end the process with a
/// fatal error when `read` is interrupted by a signal (a child's SIGCHLD, a test's SIGTERM);
/// a reader thread that collects a child's output uses these instead.
public enum PipeRead {
    /// The next bytes the pipe holds (at most `limit`), waiting for some; empty at end of file
    /// or when the read fails for a reason other than EINTR.
    public static func next(_ fd: Int32, limit: Int = 65_536) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: limit)
        let result = bytes.withUnsafeMutableBytes { buffer in
            syscall { read(fd, buffer.baseAddress, buffer.count) }
        }
        guard case .done(let count) = result else { return [] }
        bytes.removeSubrange(count...)
        return bytes
    }

    /// Everything until end of file.
    public static func toEnd(_ fd: Int32) -> [UInt8] {
        var all: [UInt8] = []
        while true {
            let chunk = next(fd)
            if chunk.isEmpty { return all }
            all += chunk
        }
    }
}
