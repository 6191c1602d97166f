fn main() {
    println!("fixture");
}
