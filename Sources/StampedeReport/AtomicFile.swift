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

    private static func writeAll(_ fd: Int32, _ data: Data, path: String) throws {
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
