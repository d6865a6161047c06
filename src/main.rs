fn main() {
    println!("tabula");
}
