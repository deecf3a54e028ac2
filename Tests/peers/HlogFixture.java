// Writes Tests/StampedeReportTests/Fixtures/java-writer.hlog with HdrHistogram's Java
// HistogramLogWriter (Debian libhdrhistogram-java 2.1.11), the values of hlog_fixture.py.
// A JDK runs it as a single-file program (the tests only read the committed file):
//   java -cp /usr/share/java/hdrhistogram.jar Tests/peers/HlogFixture.java OUT.hlog
import java.io.PrintStream;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramLogWriter;

public class HlogFixture {
    public static void main(String[] args) throws Exception {
        try (PrintStream out = new PrintStream(args[0], "UTF-8")) {
            HistogramLogWriter writer = new HistogramLogWriter(out);
            long start = 1764000000000L;
            writer.outputLogFormatVersion();
            writer.outputStartTime(start);
            writer.setBaseTime(start);
            writer.outputBaseTime(start);
            writer.outputLegend();
            for (int interval = 0; interval < 3; interval++) {
                Histogram h = new Histogram(1, 3_600_000_000L, 3);
                for (long i = 1; i <= 2000; i++) {
                    h.recordValue((i * i * 37 + interval * 7919) % 5_000_000 + 1);
                }
                h.recordValue(3_000_000_000L - interval);
                h.setStartTimeStamp(start + interval * 1000L);
                h.setEndTimeStamp(start + (interval + 1) * 1000L);
                writer.outputIntervalHistogram(h);
            }
        }
    }
}
