// App is the JVM app of drainit's thread-dump test (integration/dumps_test.go), run from source
// (`java App.java`, JDK 11+), so that the test needs a JDK but no build step. It prints "ready"
// once its shutdown hook is in place, then sleeps. On SIGTERM the JVM runs the hook, which prints
// "shutdown" and ends the JVM with status 0 (without it a JVM stopped by SIGTERM exits 143).
// SIGQUIT is the JVM's own: it prints a thread dump on stdout and goes on running.
public class App {
    public static void main(String[] args) throws InterruptedException {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.out.println("shutdown");
            System.out.flush();
            Runtime.getRuntime().halt(0);
        }, "shutdown-hook"));
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(Long.MAX_VALUE);
    }
}
