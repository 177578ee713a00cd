// Named values in insertion order: what Module::named_parameters(), named_buffers(),
// named_children(), named_modules() and state_dict() return.
//
//   for (auto& item : net->named_parameters())          // LibTorch's items
//     std::cout << item.key() << ": " << item.value().sizes() << '\n';
//   for (auto& [name, p] : net->named_parameters()) ...  // Python's (name, value) pairs
//   wick::Tensor w = net->named_parameters()["fc.weight"];
//   if (wick::Tensor* b = params.find("fc.bias")) ...
//
// An item is a std::pair (first, second) that also answers LibTorch's key() and value(). The
// dictionary is a vector of items (push_back, size, iteration, [i]) with lookup by key; lookup
// is a scan, as the lists are short. Keys may repeat here (a module registered under two names
// lists its parameters under both); lookup finds the first.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "wick/error.h"

namespace wick {

template <class Key, class Value>
class OrderedDict {
 public:
  class Item : public std::pair<Key, Value> {
   public:
    using std::pair<Key, Value>::pair;
    Item(std::pair<Key, Value> p) : std::pair<Key, Value>(std::move(p)) {}  // NOLINT(google-explicit-constructor)
    const Key& key() const noexcept { return this->first; }
    Value& value() noexcept { return this->second; }
    const Value& value() const noexcept { return this->second; }
    Value& operator*() noexcept { return this->second; }
    const Value& operator*() const noexcept { return this->second; }
    Value* operator->() noexcept { return &this->second; }
    const Value* operator->() const noexcept { return &this->second; }
    const std::pair<Key, Value>& pair() const noexcept { return *this; }
  };
  using key_type = Key;
  using mapped_type = Value;
  using value_type = Item;
  using iterator = typename std::vector<Item>::iterator;
  using const_iterator = typename std::vector<Item>::const_iterator;

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) : items_(items) {}

  // The vector's interface.
  iterator begin() noexcept { return items_.begin(); }
  iterator end() noexcept { return items_.end(); }
  const_iterator begin() const noexcept { return items_.begin(); }
  const_iterator end() const noexcept { return items_.end(); }
  size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  bool is_empty() const noexcept { return items_.empty(); }
  void reserve(size_t n) { items_.reserve(n); }
  void clear() noexcept { items_.clear(); }
  void push_back(Item item) { items_.push_back(std::move(item)); }
  template <class... Args>
  Item& emplace_back(Args&&... args) {
    return items_.emplace_back(std::forward<Args>(args)...);
  }
  Item& front() { return items_.front(); }
  const Item& front() const { return items_.front(); }
  Item& back() { return items_.back(); }
  const Item& back() const { return items_.back(); }
  iterator erase(const_iterator pos) { return items_.erase(pos); }
  // The i-th item (unchecked, as std::vector's operator[]); at(i) checks (IndexError).
  Item& operator[](size_t i) noexcept { return items_[i]; }
  const Item& operator[](size_t i) const noexcept { return items_[i]; }
  Item& at(size_t i) { return items_[checked(i)]; }
  const Item& at(size_t i) const { return items_[checked(i)]; }

  // The value under key; KeyError "[OrderedDict] ..." when there is none.
  Value& operator[](const Key& key) { return at(key); }
  const Value& operator[](const Key& key) const { return at(key); }
  Value& at(const Key& key) {
    if (Value* v = find(key)) return *v;
    missing(key);
  }
  const Value& at(const Key& key) const {
    if (const Value* v = find(key)) return *v;
    missing(key);
  }
  // The value under key, or null.
  Value* find(const Key& key) noexcept {
    for (Item& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  const Value* find(const Key& key) const noexcept {
    for (const Item& item : items_)
      if (item.first == key) return &item.second;
    return nullptr;
  }
  bool contains(const Key& key) const noexcept { return find(key) != nullptr; }

  // Adds an item; KeyError when key is there already (LibTorch's insert). push_back does not check.
  Value& insert(Key key, Value value) {
    if (contains(key)) detail::raise<KeyError>("OrderedDict", "key '", key, "' already defined");
    return items_.emplace_back(std::move(key), std::move(value)).second;
  }

  const std::vector<Item>& items() const noexcept { return items_; }
  std::vector<Key> keys() const {
    std::vector<Key> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.first);
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    out.reserve(items_.size());
    for (const Item& item : items_) out.push_back(item.second);
    return out;
  }
  std::vector<std::pair<Key, Value>> pairs() const { return {items_.begin(), items_.end()}; }
  // The items as a vector of pairs, for code written when the lists were one.
  operator std::vector<std::pair<Key, Value>>() const { return pairs(); }  // NOLINT(google-explicit-constructor)

 private:
  size_t checked(size_t i) const {
    if (i >= items_.size())
      detail::raise<IndexError>("OrderedDict", "index ", i, " is out of range for ", items_.size(), " items");
    return i;
  }
  [[noreturn]] static void missing(const Key& key) {
    detail::raise<KeyError>("OrderedDict", "key '", key, "' is not defined");
  }

  std::vector<Item> items_;
};

}  // namespace wick
