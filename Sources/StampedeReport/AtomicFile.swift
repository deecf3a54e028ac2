import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// POSIX file operations for the results folder: readers (and a crash mid-write) never see a half-written file.
enum AtomicFile {
    enum MakeDirectoryResult: Equatable {
        case created
        case exists
        case failed(String)
    }

    /// mkdir(2): atomic, so it doubles as the claim on a folder name.
    static func makeDirectory(_ url: URL) -> MakeDirectoryResult {
        if mkdir(url.path, 0o755) == 0 { return .created }
        let e = errno
        return e == EEXIST ? .exists : .failed(message(e))
    }

    /// Writes `data` to a hidden temp file in the destination's folder, fsyncs it, then renames it into place
    /// (rename within one file system is atomic). The temp file is removed if anything fails.
    static func write(_ data: Data, to url: URL) throws {
        let folder = url.deletingLastPathComponent()
        let tempPath = folder.appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        let fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ResultsWriterError.cannotWriteFile(path: url.path, reason: message(errno)) }
        var renamed = false
        defer { if !renamed { unlink(tempPath) } }
        do {
            try writeAll(fd, data, path: url.path)
            if fsync(fd) != 0 { throw ResultsWriterError.cannotWriteFile(path: url.path, reason: message(errno)) }
        } catch {
            close(fd)
            throw error
        }
        if close(fd) != 0 { throw ResultsWriterError.cannotWriteFile(path: url.path, reason: message(errno)) }
        if rename(tempPath, url.path) != 0 { throw ResultsWriterError.cannotWriteFile(path: url.path, reason: message(errno)) }
        renamed = true
    }

    /// Makes the renames durable; best effort (some file systems refuse fsync on a directory).
    static func syncDirectory(_ url: URL) {
        let fd = open(url.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    enum OpenResult {
        case opened(Int32)
        case failed(String)
    }

    /// Opens (creating, or appending to) a file of an interval spool.
    static func openForAppend(_ url: URL) -> OpenResult {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        return fd >= 0 ? .opened(fd) : .failed(message(errno))
    }

    /// Writes all of `data` to `fd`; nil when written, else the system's reason.
    static func appendAll(_ fd: Int32, _ data: Data) -> String? {
        do { try writeAll(fd, data, path: "") } catch let ResultsWriterError.cannotWriteFile(_, reason) { return reason } catch { return "\(error)" }
        return nil
    }

    /// fsync(2) and close(2); nil when both succeeded, else the reason.
    static func syncAndClose(_ fd: Int32) -> String? {
        let synced = fsync(fd) == 0 ? nil : message(errno)
        let closed = close(fd) == 0 ? nil : message(errno)
        return synced ?? closed
    }

    /// Moves a finished file into place: rename(2), or, across file systems, a copy to a
    /// temp file renamed into place and the original removed. nil when moved, else the reason.
    static func moveIn(_ from: URL, _ to: URL) -> String? {
        if rename(from.path, to.path) == 0 { return nil }
        guard errno == EXDEV else { return message(errno) }
        let temp = to.deletingLastPathComponent().appendingPathComponent(".\(to.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0 ... .max))")
        do { try FileManager.default.copyItem(at: from, to: temp) } catch { return "cannot copy \(from.path): \(error.localizedDescription)" }
        if rename(temp.path, to.path) != 0 {
            let reason = message(errno)
            unlink(temp.path)
            return reason
        }
        unlink(from.path)
        return nil
    }

    static func writeAll(_ fd: Int32, _ data: Data, path: String) throws {
        try data.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let n = posixWrite(fd, base + offset, buffer.count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ResultsWriterError.cannotWriteFile(path: path, reason: message(errno))
                }
                offset += n
            }
        }
    }

    private static func message(_ e: Int32) -> String { String(cString: strerror(e)) }
}

// File scope, because inside `AtomicFile` the name `write` means its own method.
private func posixWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
