import Testing
@testable import StampedeLoop

extension ByteBuffer {
    var contents: [UInt8] { Array(UnsafeRawBufferPointer(readable)) }
}

@Suite struct ByteBufferTests {
    @Test func newBufferIsEmpty() {
        let b = ByteBuffer()
        #expect(b.isEmpty && b.count == 0)
        #expect(b.readable.count == 0)
        #expect(b.contents == [])
    }

    @Test func appendThenConsumeIsFIFO() {
        let b = ByteBuffer()
        b.append([1, 2, 3])
        b.append([4, 5])
        #expect(b.count == 5 && !b.isEmpty)
        #expect(b.contents == [1, 2, 3, 4, 5])
        b.consume(2)
        #expect(b.contents == [3, 4, 5])
        b.append([6])
        #expect(b.contents == [3, 4, 5, 6])
        b.consume(4)
        #expect(b.isEmpty && b.contents == [])
        // Consuming everything rewinds, so the next append starts at the front again.
        #expect(b.head == 0 && b.tail == 0)
        b.append([])
        #expect(b.isEmpty)
    }

    @Test func reserveAndCommitAppendInPlace() {
        let b = ByteBuffer()
        b.append([9])
        let p = b.reserve(100)
        for i in 0..<10 { p.storeBytes(of: UInt8(i), toByteOffset: i, as: UInt8.self) }
        #expect(b.count == 1, "reserve alone adds nothing")
        b.commit(10)
        #expect(b.contents == [9] + (0..<10).map { UInt8($0) })
        #expect(b.capacity - b.tail >= 90)
    }

    @Test func reserveZeroIsSafeOnAFreshOrShrunkBuffer() {
        // `EventLoop.write(_:reserving: 0)` on a connection that never wrote reaches this.
        let b = ByteBuffer()
        _ = b.reserve(0)
        b.commit(0)
        #expect(b.isEmpty)
        b.append([UInt8](repeating: 1, count: 100_000))
        b.consume(100_000)
        b.shrinkIfIdle()
        _ = b.reserve(0)
        b.commit(0)
        b.append([5])
        #expect(b.contents == [5])
    }

    @Test func readableIsMutableInPlace() {
        let b = ByteBuffer()
        b.append([1, 2, 3])
        b.readable[1] = 42
        #expect(b.contents == [1, 42, 3])
    }

    @Test func growthPreservesContentAfterTheHeadHasMoved() {
        let b = ByteBuffer()
        let data = (0..<5000).map { UInt8(truncatingIfNeeded: $0 * 31) }
        b.append(Array(data[0..<1000]))
        b.consume(100)
        b.append(Array(data[1000..<5000]))
        #expect(b.contents == Array(data[100...]))
        #expect(b.capacity >= 4900)
    }

    @Test func compactionMovesLiveBytesToTheFrontWithoutGrowing() {
        let b = ByteBuffer()
        let data = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }
        b.append(data)
        #expect(b.capacity == 1024)
        b.consume(900)
        b.append([UInt8](repeating: 7, count: 500))
        #expect(b.capacity == 1024, "room freed at the head is reused")
        #expect(b.head == 0)
        #expect(b.contents == Array(data[900...]) + [UInt8](repeating: 7, count: 500))
    }

    @Test func growsWhenCompactionCannotMakeRoom() {
        let b = ByteBuffer()
        b.append([UInt8](repeating: 1, count: 1000))
        b.consume(10)
        b.append([UInt8](repeating: 2, count: 5000))
        #expect(b.contents == [UInt8](repeating: 1, count: 990) + [UInt8](repeating: 2, count: 5000))
        #expect(b.capacity >= 5990)
    }

    @Test func shrinkIfIdleFreesOnlyLargeEmptyBuffers() {
        let b = ByteBuffer()
        b.append([UInt8](repeating: 1, count: 100_000))
        b.shrinkIfIdle(limit: 64 * 1024)
        #expect(b.count == 100_000 && b.capacity >= 100_000, "not idle: kept")
        b.consume(100_000)
        b.shrinkIfIdle(limit: 64 * 1024)
        #expect(b.capacity == 0 && b.storage == nil && b.isEmpty)
        b.append([1, 2, 3])
        #expect(b.contents == [1, 2, 3], "usable again after shrinking")
        b.consume(3)
        b.shrinkIfIdle(limit: 64 * 1024)
        #expect(b.capacity == 1024, "small buffers are kept")
    }

    @Test func clearDropsEverything() {
        let b = ByteBuffer()
        b.append([1, 2, 3])
        b.consume(1)
        b.clear()
        #expect(b.isEmpty && b.contents == [])
        b.append([4])
        #expect(b.contents == [4])
    }

    @Test func randomisedOperationsMatchAnArrayModel() {
        var rng = FastRandom(seed: 0xB0FF)
        let b = ByteBuffer()
        var model: [UInt8] = []
        var next: UInt8 = 0
        func fresh(_ n: Int) -> [UInt8] { (0..<n).map { _ in next &+= 1; return next } }
        for step in 0..<4000 {
            switch rng.next() % 10 {
            case 0, 1, 2:
                let chunk = fresh(Int(rng.next() % 3000))
                b.append(chunk)
                model += chunk
            case 3:
                // reserve more than is written, commit part of it
                let want = Int(rng.next() % 5000) + 1
                let write = Int(rng.next() % UInt64(want + 1))
                let chunk = fresh(write)
                let p = b.reserve(want)
                chunk.withUnsafeBytes { if write > 0 { p.copyMemory(from: $0.baseAddress!, byteCount: write) } }
                b.commit(write)
                model += chunk
            case 4, 5, 6, 7:
                let n = model.isEmpty ? 0 : Int(rng.next() % UInt64(model.count + 1))
                b.consume(n)
                model.removeFirst(n)
            case 8:
                b.shrinkIfIdle(limit: 4096)
            default:
                if rng.next() % 20 == 0 { b.clear(); model.removeAll() }
            }
            #expect(b.count == model.count)
            if b.contents != model {
                Issue.record("content differs at step \(step)")
                return
            }
            #expect(b.head <= b.tail && b.tail <= b.capacity)
        }
    }
}
